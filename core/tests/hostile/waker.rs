//! A hand-made waker whose clone, wake and drop run hooks (calls back into the registry,
//! panics), for `hostile.rs`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::task::{RawWaker, RawWakerVTable, Waker};

/// What a hostile waker does when it is cloned, woken or dropped.
#[derive(Default)]
pub struct Hooks {
    pub on_clone: Option<Box<dyn Fn() + Send + Sync>>,
    pub on_wake: Option<Box<dyn Fn() + Send + Sync>>,
    pub on_drop: Option<Box<dyn Fn() + Send + Sync>>,
    pub wakes: AtomicUsize,
}

impl Hooks {
    fn run(hook: &Option<Box<dyn Fn() + Send + Sync>>) {
        if let Some(hook) = hook {
            hook();
        }
    }
}

static VTABLE: RawWakerVTable = RawWakerVTable::new(clone_raw, wake_raw, wake_by_ref_raw, drop_raw);

fn hooks_of<'a>(data: *const ()) -> &'a Hooks {
    // SAFETY: `data` comes from `Arc::into_raw` of an `Arc<Hooks>` that this waker owns.
    unsafe { &*(data as *const Hooks) }
}

unsafe fn clone_raw(data: *const ()) -> RawWaker {
    // SAFETY: the waker owns one count of the Arc; the clone owns a new one.
    unsafe { Arc::increment_strong_count(data as *const Hooks) };
    Hooks::run(&hooks_of(data).on_clone);
    RawWaker::new(data, &VTABLE)
}

unsafe fn wake_by_ref_raw(data: *const ()) {
    let hooks = hooks_of(data);
    hooks.wakes.fetch_add(1, Ordering::SeqCst);
    Hooks::run(&hooks.on_wake);
}

unsafe fn wake_raw(data: *const ()) {
    // Dropped even if the wake hook panics.
    let _owned = OwnedCount(data);
    unsafe { wake_by_ref_raw(data) };
}

unsafe fn drop_raw(data: *const ()) {
    let _owned = OwnedCount(data);
    Hooks::run(&hooks_of(data).on_drop);
}

/// One count of the waker's `Arc`, given back when dropped (also while unwinding).
struct OwnedCount(*const ());

impl Drop for OwnedCount {
    fn drop(&mut self) {
        // SAFETY: this waker owned one count.
        unsafe { Arc::decrement_strong_count(self.0 as *const Hooks) };
    }
}

pub fn hostile_waker(hooks: Hooks) -> (Waker, Arc<Hooks>) {
    let hooks = Arc::new(hooks);
    let data = Arc::into_raw(hooks.clone()) as *const ();
    // SAFETY: the vtable's functions keep the Arc's count as a Waker's contract requires.
    (
        unsafe { Waker::from_raw(RawWaker::new(data, &VTABLE)) },
        hooks,
    )
}

/// A hook that panics once (the first time it runs after being armed).
pub fn panics_once(armed: &Arc<AtomicBool>) -> Box<dyn Fn() + Send + Sync> {
    let armed = armed.clone();
    Box::new(move || {
        if armed.swap(false, Ordering::SeqCst) {
            panic!("hostile waker");
        }
    })
}
