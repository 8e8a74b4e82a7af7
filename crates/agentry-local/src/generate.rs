//! The generation loop: the prompt through the transformer (reusing the cached keys and values
//! of a shared prefix), then one token at a time until a stop token, a stop sequence, the token
//! budget, or a consumer that went away.

use crate::detokenize::Detokenizer;
use crate::sampling::Sampling;
use crate::transformer::Transformer;
use agentry_core::TurnProgress;
use candle_core::{Device, Tensor};
use tokenizers::Tokenizer;

/// Prompt tokens run through the model at once.
const PROMPT_CHUNK: usize = 256;

/// The transformer and what its key/value cache holds.
pub(crate) struct Engine {
    transformer: Transformer,
    /// The tokens whose keys and values are cached, in order.
    cached: Vec<u32>,
}

/// One turn to generate.
pub(crate) struct Generation<'a> {
    /// The rendered, tokenized prompt.
    pub(crate) prompt: &'a [u32],
    /// The most tokens to produce.
    pub(crate) max_tokens: usize,
    /// How to choose tokens.
    pub(crate) sampling: &'a Sampling,
    /// Tokens that end the turn.
    pub(crate) stop_tokens: &'a [u32],
    /// Texts that end the turn (not included in the output).
    pub(crate) stop_sequences: &'a [String],
}

/// What a turn hands out as it goes.
#[derive(Debug)]
pub(crate) enum Emitted {
    /// A piece of text.
    Text(String),
    /// How far the turn is.
    Progress(TurnProgress),
}

/// How often, in generated tokens, the turn says how far it is.
const PROGRESS_EVERY: usize = 16;

/// How a turn ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Finish {
    /// A stop token or stop sequence.
    Stop,
    /// The token budget was spent.
    Length,
    /// The consumer went away.
    Cancelled,
}

/// What a turn cost and how it ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Outcome {
    /// Prompt tokens.
    pub(crate) prompt_tokens: usize,
    /// Prompt tokens whose keys and values were reused from the previous turn.
    pub(crate) reused_tokens: usize,
    /// Tokens generated.
    pub(crate) output_tokens: usize,
    /// How it ended.
    pub(crate) finish: Finish,
}

impl Engine {
    /// An engine with an empty cache.
    pub(crate) fn new(transformer: Transformer) -> Self {
        Engine {
            transformer,
            cached: Vec::new(),
        }
    }

    /// Generates one turn, handing each piece of text, and how far it is (after each chunk of
    /// the prompt read, and every few tokens generated), to `emit` (which returns `false` when
    /// nobody listens any more).
    pub(crate) fn generate(
        &mut self,
        tokenizer: &Tokenizer,
        turn: &Generation<'_>,
        emit: &mut dyn FnMut(Emitted) -> bool,
    ) -> candle_core::Result<Outcome> {
        let result = self.run(tokenizer, turn, emit);
        if result.is_err() {
            // The cache may hold a half-written step: start the next turn afresh.
            self.cached.clear();
        }
        result
    }

    fn run(
        &mut self,
        tokenizer: &Tokenizer,
        turn: &Generation<'_>,
        emit: &mut dyn FnMut(Emitted) -> bool,
    ) -> candle_core::Result<Outcome> {
        let prompt = turn.prompt;
        // The longest start the cache shares with the prompt is reused: a conversation's next
        // turn shares all of the last prompt even when the last answer is rendered back unlike
        // the tokens generated (a tool call in the template's own form). Positions past it are
        // written over. The prompt's last token always runs: its logits start the generation.
        let common = self
            .cached
            .iter()
            .zip(prompt)
            .take_while(|(cached, wanted)| cached == wanted)
            .count();
        let reused = common.min(prompt.len().saturating_sub(1));
        self.cached.truncate(reused);
        let to_read = prompt.len() - reused;
        let progress = |read: usize, generated: usize| {
            Emitted::Progress(TurnProgress {
                prompt_read: u32::try_from(read).unwrap_or(u32::MAX),
                prompt_tokens: u32::try_from(to_read).unwrap_or(u32::MAX),
                generated: u32::try_from(generated).unwrap_or(u32::MAX),
            })
        };
        let mut logits = None;
        let mut read = 0;
        for chunk in prompt[reused..].chunks(PROMPT_CHUNK) {
            logits = Some(self.step(chunk)?);
            read += chunk.len();
            // A prompt of one chunk is read too soon to be worth saying.
            if to_read > PROMPT_CHUNK && !emit(progress(read, 0)) {
                return Ok(Outcome {
                    prompt_tokens: prompt.len(),
                    reused_tokens: reused,
                    output_tokens: 0,
                    finish: Finish::Cancelled,
                });
            }
        }
        let mut logits = logits.ok_or_else(|| candle_core::Error::Msg("empty prompt".into()))?;

        let mut processor = turn.sampling.processor();
        let mut detokenizer = Detokenizer::new(tokenizer);
        let mut stops = StopScan::new(turn.stop_sequences);
        let mut generated: Vec<u32> = Vec::new();
        let finish = loop {
            if turn.max_tokens == 0 {
                break Finish::Length;
            }
            let logits_1d = logits;
            let penalty = turn.sampling.repeat_penalty;
            let logits_1d = if penalty == 1.0 || generated.is_empty() {
                logits_1d
            } else {
                let from = generated.len().saturating_sub(turn.sampling.repeat_last_n);
                candle_transformers::utils::apply_repeat_penalty(
                    &logits_1d,
                    penalty,
                    &generated[from..],
                )?
            };
            let token = processor.sample(&logits_1d)?;
            generated.push(token);
            if turn.stop_tokens.contains(&token) {
                break Finish::Stop;
            }
            let (piece, stopped) = stops.push(&detokenizer.push(token));
            if !piece.is_empty() && !emit(Emitted::Text(piece)) {
                break Finish::Cancelled;
            }
            if generated.len().is_multiple_of(PROGRESS_EVERY)
                && !emit(progress(to_read, generated.len()))
            {
                break Finish::Cancelled;
            }
            if stopped {
                break Finish::Stop;
            }
            if generated.len() >= turn.max_tokens {
                break Finish::Length;
            }
            logits = self.step(&[token])?;
        };
        let rest = stops.finish();
        if !rest.is_empty() && finish != Finish::Cancelled {
            emit(Emitted::Text(rest));
        }
        Ok(Outcome {
            prompt_tokens: prompt.len(),
            reused_tokens: reused,
            output_tokens: generated.len(),
            finish,
        })
    }

    /// Runs `tokens` after the cached ones; the logits of the last.
    fn step(&mut self, tokens: &[u32]) -> candle_core::Result<Tensor> {
        let logits = self
            .transformer
            .forward(tokens, self.cached.len())
            .map_err(candle_core::Error::Msg)?;
        let logits = Tensor::from_slice(logits, logits.len(), &Device::Cpu)?;
        self.cached.extend_from_slice(tokens);
        Ok(logits)
    }
}

/// Finds stop sequences in streamed text, holding back a tail that may be the start of one.
struct StopScan<'a> {
    stops: &'a [String],
    /// Text received and not yet released.
    held: String,
}

impl<'a> StopScan<'a> {
    fn new(stops: &'a [String]) -> Self {
        StopScan {
            stops,
            held: String::new(),
        }
    }

    /// Adds `piece`; returns the text safe to release and whether a stop sequence was found
    /// (the text before it is released; it and what follows are dropped).
    fn push(&mut self, piece: &str) -> (String, bool) {
        if self.stops.is_empty() {
            return (piece.to_owned(), false);
        }
        self.held.push_str(piece);
        let found = self
            .stops
            .iter()
            .filter(|s| !s.is_empty())
            .filter_map(|s| self.held.find(s.as_str()))
            .min();
        if let Some(at) = found {
            let out = self.held[..at].to_owned();
            self.held.clear();
            return (out, true);
        }
        let keep = self
            .stops
            .iter()
            .map(|s| longest_prefix_suffix(&self.held, s))
            .max()
            .unwrap_or(0);
        let cut = self.held.len() - keep;
        let out = self.held[..cut].to_owned();
        self.held.drain(..cut);
        (out, false)
    }

    /// The text still held when the turn ends without a stop sequence.
    fn finish(self) -> String {
        self.held
    }
}

/// The length of the longest end of `text` that is a proper beginning of `stop`.
fn longest_prefix_suffix(text: &str, stop: &str) -> usize {
    stop.char_indices()
        .map(|(i, _)| i)
        .skip(1)
        .filter(|&i| text.ends_with(&stop[..i]))
        .max()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_sequence_split_across_pieces_is_found_and_dropped() {
        let stops = vec!["END".to_owned()];
        let mut scan = StopScan::new(&stops);
        assert_eq!(scan.push("Hello E"), ("Hello ".to_owned(), false));
        assert_eq!(scan.push("N"), (String::new(), false));
        assert_eq!(scan.push("D and more"), (String::new(), true));
    }

    #[test]
    fn a_near_miss_is_released() {
        let stops = vec!["END".to_owned()];
        let mut scan = StopScan::new(&stops);
        assert_eq!(scan.push("EN"), (String::new(), false));
        assert_eq!(scan.push("ough"), ("ENough".to_owned(), false));
        assert_eq!(scan.push(" E"), (" ".to_owned(), false));
        assert_eq!(scan.finish(), "E");
    }

    #[test]
    fn without_stop_sequences_pieces_pass_through() {
        let mut scan = StopScan::new(&[]);
        assert_eq!(scan.push("abc"), ("abc".to_owned(), false));
    }
}
