//! Waiting awake for a local answer (`agentry_core::awake`): the runtime's other tasks go on
//! meanwhile, and a late answer is waited for asleep once the awake time is over.

use agentry_core::awake::{LOCAL_ANSWER, awake_for};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// `inner`, counting its polls in `polls`.
struct Counted<F> {
    inner: Pin<Box<F>>,
    polls: Arc<AtomicUsize>,
}

impl<F: Future> Future for Counted<F> {
    type Output = F::Output;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        self.polls.fetch_add(1, Ordering::Relaxed);
        self.inner.as_mut().poll(cx)
    }
}

#[tokio::test(flavor = "current_thread")]
async fn other_tasks_of_the_thread_go_on_while_an_answer_is_awaited_awake() {
    // The answer comes from a task of the same thread, after it has done some work of its own:
    // it can only come if the waiting task yields to it.
    let (tx, rx) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        tx.send("answer").unwrap();
    });
    let started = Instant::now();
    assert_eq!(awake_for(LOCAL_ANSWER, rx).await, Ok("answer"));
    assert!(started.elapsed() < Duration::from_secs(1));
}

#[tokio::test(flavor = "current_thread")]
async fn a_late_answer_is_waited_for_asleep_after_the_awake_time() {
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        tx.send(7).unwrap();
    });
    let polls = Arc::new(AtomicUsize::new(0));
    let counted = Counted {
        inner: Box::pin(rx),
        polls: polls.clone(),
    };
    let started = Instant::now();
    assert_eq!(awake_for(Duration::from_micros(100), counted).await, Ok(7));
    assert!(started.elapsed() >= Duration::from_millis(50));
    // Polled while awake (for 100 µs) and then once or twice more: not for the 50 ms.
    let polls = polls.load(Ordering::Relaxed);
    assert!(polls >= 2, "{polls} polls");
    assert!(polls < 5_000, "{polls} polls: it kept waiting awake");
}

#[tokio::test(flavor = "current_thread")]
async fn an_answer_already_there_is_taken_at_the_first_poll() {
    let polls = Arc::new(AtomicUsize::new(0));
    let counted = Counted {
        inner: Box::pin(std::future::ready(3)),
        polls: polls.clone(),
    };
    assert_eq!(awake_for(LOCAL_ANSWER, counted).await, 3);
    assert_eq!(polls.load(Ordering::Relaxed), 1);
}
