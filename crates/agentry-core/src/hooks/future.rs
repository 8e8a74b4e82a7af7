//! The future of an asynchronous hook, kept inline instead of boxed.

use super::{BoxError, HookResult};
use stackfuture::StackFuture;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::{Context, Poll};

/// The room, in bytes, a hook's future has inline: enough for the largest event, the hook's
/// context and a few locals. A larger future (a hook holding big locals across an await) is
/// boxed instead, which works the same and costs one allocation per call.
pub const HOOK_FUTURE_INLINE: usize = 384;

pin_project_lite::pin_project! {
    /// The future an asynchronous hook returns for one event.
    ///
    /// The hook's own future is stored inside it, not on the heap, when it fits in
    /// [`HOOK_FUTURE_INLINE`] bytes (the closure hooks of [`on`](super::on) and the methods of a
    /// [`Hook`](super::Hook) that hold no large locals): calling a hook then allocates nothing.
    /// A future that does not fit is boxed.
    pub struct HookFuture<'a, E> {
        #[pin]
        inner: StackFuture<'a, HookResult<E>, HOOK_FUTURE_INLINE>,
    }
}

impl<'a, E> HookFuture<'a, E> {
    /// Wraps a hook's future: inline when it fits, boxed otherwise.
    #[inline]
    pub fn new<F>(future: F) -> Self
    where
        F: Future<Output = HookResult<E>> + Send + 'a,
    {
        HookFuture {
            inner: StackFuture::from_or_box(future),
        }
    }

    /// Makes a hook's future with `make`, catching a panic there: the future then reports it (as
    /// a [`HookFailure::Panic`](super::HookFailure::Panic) once dispatched).
    #[inline]
    pub fn call<F>(make: impl FnOnce() -> F) -> Self
    where
        F: Future<Output = HookResult<E>> + Send + 'a,
        E: Send + 'a,
    {
        match std::panic::catch_unwind(AssertUnwindSafe(make)) {
            Ok(future) => Self::new(future),
            Err(panic) => Self::new(std::future::ready(Err(panicked(panic)))),
        }
    }

    /// True when a future of type `F` is stored inline (no allocation).
    pub const fn fits<F>() -> bool {
        type Inline<'a, E> = StackFuture<'a, HookResult<E>, HOOK_FUTURE_INLINE>;
        Inline::<E>::has_space_for::<F>() && Inline::<E>::has_alignment_for::<F>()
    }
}

impl<E> Future for HookFuture<'_, E> {
    type Output = HookResult<E>;
    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.project().inner.poll(cx)
    }
}

/// The room, in bytes, an in-place hook's future ([`on_mut`](super::on_mut)) has inline: it
/// holds references to the event and the context, not the event, so it is small (and it is
/// moved once per call, which copies its whole room).
pub const IN_PLACE_FUTURE_INLINE: usize = 64;

pin_project_lite::pin_project! {
    /// The future an in-place hook ([`on_mut`](super::on_mut)) returns for one event: like
    /// [`HookFuture`], held inline when it fits in [`IN_PLACE_FUTURE_INLINE`] bytes and boxed
    /// otherwise.
    pub struct InPlaceFuture<'a> {
        #[pin]
        inner: StackFuture<'a, HookResult<()>, IN_PLACE_FUTURE_INLINE>,
    }
}

impl<'a> InPlaceFuture<'a> {
    /// Makes a hook's future with `make`, catching a panic there as [`HookFuture::call`] does.
    #[inline]
    pub fn call<F>(make: impl FnOnce() -> F) -> Self
    where
        F: Future<Output = HookResult<()>> + Send + 'a,
    {
        let future = match std::panic::catch_unwind(AssertUnwindSafe(make)) {
            Ok(future) => StackFuture::from_or_box(future),
            Err(panic) => StackFuture::from_or_box(std::future::ready(Err(panicked(panic)))),
        };
        InPlaceFuture { inner: future }
    }
}

impl Future for InPlaceFuture<'_> {
    type Output = HookResult<()>;
    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.project().inner.poll(cx)
    }
}

impl std::fmt::Debug for InPlaceFuture<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("InPlaceFuture")
    }
}

impl<E> std::fmt::Debug for HookFuture<'_, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HookFuture")
    }
}

/// The error a hook's future reports when the hook panicked while making it.
fn panicked(panic: Box<dyn std::any::Any + Send>) -> BoxError {
    Box::new(Panicked(crate::describe::panic_message(panic)))
}

/// A hook panicked while making its future: the error its [`HookFuture`] reports, which the
/// dispatcher turns into a [`HookFailure::Panic`](super::HookFailure::Panic).
#[derive(Debug)]
pub(crate) struct Panicked(pub(crate) String);

impl std::fmt::Display for Panicked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Panicked {}
