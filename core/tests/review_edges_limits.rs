//! Hostile review: edges of the 0.2 API at the limits: the clock at `u64::MAX` (lapsed,
//! keep_alive, remaining), and validation errors' `Display` for hostile inputs and zero
//! limits. Each test is named after the behaviour it pins; a failing test is a finding.
//! (Split from `review_edges.rs`.)

use std::pin::pin;
use std::sync::mpsc;
use std::task::{Context, Waker};
use std::thread;
use std::time::Duration;

use alkstore_mem::{Config, LockError, LockRegistry, ManualClock, Timestamp};

const SEC: Duration = Duration::from_secs(1);

/// Runs `f` on its own thread; `Err` if it does not finish within `secs` (a hang or a spin).
/// A spinning thread is left behind (it burns a core until the test binary exits).
fn within<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> Result<T, ()> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(secs)).map_err(|_| ())
}

fn noop_cx() -> Context<'static> {
    Context::from_waker(Waker::noop())
}

// ---------------------------------------------------------------- clock at u64::MAX

/// A lease that never lapses (deadline MAX) watched by `lapsed()` once the clock reads MAX:
/// the poll must return (Pending), not loop forever re-sleeping on an already-due sleep.
#[test]
fn lapsed_poll_returns_at_max_clock_for_a_never_lapsing_lease() {
    let result = within(5, || {
        let clock = ManualClock::new();
        let registry = LockRegistry::new(clock.clone());
        let lock = registry
            .try_lock("forever", "a", Duration::MAX)
            .unwrap()
            .unwrap();
        assert_eq!(lock.deadline(), Timestamp::MAX);
        clock.set(Timestamp::MAX);
        let mut lapsed = pin!(lock.lapsed());
        lapsed.as_mut().poll(&mut noop_cx()).is_pending()
    });
    assert_eq!(
        result,
        Ok(true),
        "Lapsed::poll spun forever at Timestamp::MAX (or resolved)"
    );
}

/// keep_alive at a clock reading of MAX: its sleep until `now + every` saturates to MAX and
/// is due at once; the renewal succeeds (deadline MAX never lapses); the loop must still
/// yield rather than spin inside one poll.
#[test]
fn keep_alive_poll_returns_at_max_clock() {
    let result = within(5, || {
        let clock = ManualClock::new();
        let registry = LockRegistry::new(clock.clone());
        clock.set(Timestamp::MAX);
        let lock = registry.try_lock("job", "a", SEC).unwrap().unwrap();
        let mut alive = pin!(lock.keep_alive(SEC));
        alive.as_mut().poll(&mut noop_cx()).is_pending()
    });
    assert_eq!(
        result,
        Ok(true),
        "keep_alive spun forever in one poll at Timestamp::MAX"
    );
}

/// Same spin with a clock one nanosecond short of MAX: every sleep saturates.
#[test]
fn keep_alive_poll_returns_just_below_max_clock() {
    let result = within(5, || {
        let clock = ManualClock::new();
        let registry = LockRegistry::new(clock.clone());
        clock.set(Timestamp::from_nanos(u64::MAX - 1));
        let lock = registry.try_lock("job", "a", SEC).unwrap().unwrap();
        let mut alive = pin!(lock.keep_alive(SEC));
        let first = alive.as_mut().poll(&mut noop_cx()).is_pending();
        clock.set(Timestamp::MAX);
        (first, alive.as_mut().poll(&mut noop_cx()).is_pending())
    });
    assert_eq!(result, Ok((true, true)), "keep_alive spun at MAX");
}

/// A live lease must never report `remaining() == 0` (the doc: zero once it lapsed or was
/// released). At clock MAX a deadline-MAX lease is held forever but reports zero.
#[test]
fn remaining_is_nonzero_while_is_held_at_max_clock() {
    let clock = ManualClock::new();
    let registry = LockRegistry::new(clock.clone());
    let lock = registry
        .try_lock("forever", "a", Duration::MAX)
        .unwrap()
        .unwrap();
    clock.set(Timestamp::MAX);
    assert!(lock.is_held());
    assert!(registry.holder("forever").is_some());
    assert_ne!(
        lock.remaining(),
        Duration::ZERO,
        "held, yet remaining() is zero"
    );
}

// ---------------------------------------------------------------- validation / Display

/// `Display` claims to quote "as `{:?}` does": a combining mark inside a name is escaped by
/// `char::escape_debug` but not by `str`'s `Debug`.
#[test]
fn error_display_quotes_like_debug_for_combining_marks() {
    let registry = LockRegistry::new(ManualClock::new());
    let name = "cafe\u{301}\n";
    let err = registry.try_lock(name, "o", SEC).unwrap_err();
    let shown = err.to_string();
    assert!(
        shown.contains(&format!("{name:?}")),
        "Display {shown:?} does not contain the Debug quoting {:?}",
        format!("{name:?}")
    );
}

/// Hostile inputs: every error's Display is short, single-line and never panics, whatever
/// the value (huge, control characters, multi-byte characters around the preview cut).
#[test]
fn every_error_display_is_short_single_line_for_hostile_inputs() {
    let registry = LockRegistry::new(ManualClock::new());
    let mut inputs: Vec<String> = vec![
        "x".repeat(1 << 20),
        "\n".repeat(1000),
        "\u{7f}".repeat(300),
        "\u{10ffff}".repeat(100),
        "\u{202e}evil\u{202d}".into(),
        "\u{1b}[31mred".into(),
    ];
    for pad in 50..70 {
        inputs.push(format!("{}\u{80}{}", "a".repeat(pad), "ü".repeat(40)));
        inputs.push(format!("{}🚀\u{1}", "a".repeat(pad)));
        inputs.push(format!("alk:{}é", "b".repeat(pad)));
    }
    let mut count = 0;
    for v in &inputs {
        for (name, owner) in [
            (v.as_str(), "o"),
            ("ok", v.as_str()),
            (v.as_str(), ""),
            ("", v.as_str()),
        ] {
            if let Err(e) = registry.try_lock(name, owner, SEC) {
                let s = e.to_string();
                assert!(s.len() < 260, "{} bytes: {s}", s.len());
                assert!(!s.contains('\n') && !s.contains('\u{1b}'), "{s:?}");
                count += 1;
            }
        }
    }
    let big = Config::new()
        .with_max_locks(0)
        .with_max_name_len(usize::MAX)
        .with_max_owner_len(usize::MAX);
    let full = LockRegistry::with_config(ManualClock::new(), big);
    let e = full.try_lock(&"ü".repeat(1 << 19), "o", SEC).unwrap_err();
    assert!(matches!(e, LockError::CapacityExceeded { max: 0, .. }));
    assert!(e.to_string().len() < 260);
    let e = LockError::Expired {
        name: "\u{2028}".repeat(1 << 16),
        token: 1,
        ttl: Duration::MAX,
        deadline: Timestamp::MAX,
        now: Timestamp::MAX,
    };
    assert!(e.to_string().len() < 300, "{}", e.to_string().len());
    assert!(count > 100);
}

/// `Config` with zero limits: every name too long, every new name over capacity, no panic.
#[test]
fn zero_limits_refuse_cleanly() {
    let reg = LockRegistry::with_config(ManualClock::new(), Config::new().with_max_name_len(0));
    let e = reg.try_lock("a", "o", SEC).unwrap_err();
    assert!(matches!(e, LockError::InvalidName { ref name, .. } if name.is_empty()));
    assert_eq!(
        e.to_string(),
        "invalid lock name: it is 1 byte long, over the limit of 0"
    );
    assert!(reg.holder("a").is_none());
    assert!(reg.force_release("a").is_none());
    let reg = LockRegistry::with_config(ManualClock::new(), Config::new().with_max_locks(0));
    assert!(matches!(
        reg.try_lock("a", "o", SEC),
        Err(LockError::CapacityExceeded { max: 0, .. })
    ));
    let r = futures_lite::future::block_on(reg.acquire("a", "o", SEC).timeout(SEC));
    assert!(matches!(r, Err(LockError::CapacityExceeded { max: 0, .. })));
    let reg = LockRegistry::with_config(ManualClock::new(), Config::new().with_max_owner_len(0));
    assert!(matches!(
        reg.try_lock("a", "o", SEC),
        Err(LockError::InvalidOwner { .. })
    ));
}
