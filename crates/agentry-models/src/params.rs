//! Client-level default parameters, merged under the ones a request carries.

use agentry_core::ModelParams;

/// `request`'s parameters, with `defaults` filling the ones it leaves unset.
pub(crate) fn merged(defaults: &ModelParams, request: &ModelParams) -> ModelParams {
    let mut extra = defaults.extra.clone();
    extra.extend(request.extra.clone());
    ModelParams {
        temperature: request.temperature.or(defaults.temperature),
        top_p: request.top_p.or(defaults.top_p),
        max_tokens: request.max_tokens.or(defaults.max_tokens),
        stop: if request.stop.is_empty() {
            defaults.stop.clone()
        } else {
            request.stop.clone()
        },
        extra,
    }
}

/// Copies `extra` fields into a JSON request body, replacing fields of the same name.
pub(crate) fn apply_extra(body: &mut serde_json::Value, params: &ModelParams) {
    if let Some(map) = body.as_object_mut() {
        for (name, value) in &params.extra {
            map.insert(name.clone(), value.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_parameters_win_and_defaults_fill_the_rest() {
        let mut defaults = ModelParams {
            temperature: Some(0.2),
            max_tokens: Some(100),
            stop: vec!["END".into()],
            ..ModelParams::default()
        };
        defaults.extra.insert("seed".into(), 7.into());
        let request = ModelParams {
            max_tokens: Some(5),
            ..ModelParams::default()
        };
        let params = merged(&defaults, &request);
        assert_eq!(params.temperature, Some(0.2));
        assert_eq!(params.max_tokens, Some(5));
        assert_eq!(params.stop, vec!["END".to_string()]);
        assert_eq!(params.extra["seed"], 7);
    }
}
