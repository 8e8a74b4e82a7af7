//! Hook names: cheap to clone (no allocation, no atomic for `'static` names).

use std::borrow::{Borrow, Cow};
use std::fmt;
use std::sync::Arc;

/// The name of a registered hook, as errors and meta events show it.
///
/// Cloning a name given as a string literal costs nothing; other names are shared.
#[derive(Clone)]
pub struct HookName(Repr);

#[derive(Clone)]
enum Repr {
    Static(&'static str),
    Shared(Arc<str>),
}

impl HookName {
    /// The name as a string slice.
    pub fn as_str(&self) -> &str {
        match &self.0 {
            Repr::Static(s) => s,
            Repr::Shared(s) => s,
        }
    }
}

impl HookName {
    /// True when both names share their text (the same literal, or the same shared string).
    #[inline]
    pub(crate) fn same_as(&self, other: &HookName) -> bool {
        match (&self.0, &other.0) {
            (Repr::Static(a), Repr::Static(b)) => std::ptr::eq(*a, *b),
            (Repr::Shared(a), Repr::Shared(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl From<Cow<'static, str>> for HookName {
    fn from(name: Cow<'static, str>) -> Self {
        match name {
            Cow::Borrowed(s) => HookName(Repr::Static(s)),
            Cow::Owned(s) => HookName(Repr::Shared(Arc::from(s))),
        }
    }
}

impl From<&'static str> for HookName {
    fn from(name: &'static str) -> Self {
        HookName(Repr::Static(name))
    }
}

impl From<String> for HookName {
    fn from(name: String) -> Self {
        HookName(Repr::Shared(Arc::from(name)))
    }
}

impl std::ops::Deref for HookName {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for HookName {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl Borrow<str> for HookName {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl fmt::Display for HookName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for HookName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl PartialEq for HookName {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}
impl Eq for HookName {}

impl std::hash::Hash for HookName {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_str().hash(state)
    }
}

impl PartialEq<str> for HookName {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for HookName {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}
