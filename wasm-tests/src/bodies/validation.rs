//! Validation first: names, owners and ttls are checked by the same rules on every engine,
//! with the same errors, before anything changes.

use core::time::Duration;

use alkstore_mem::{AcquireFuture, InputProblem, LockError, LockHandle, LockStore, TtlProblem};

use super::{grant, holder_of, open};
use crate::engine::{Engine, Limits};
use crate::support::secs;

fn invalid_name(name: &str, problem: InputProblem) -> LockError {
    LockError::InvalidName {
        name: name.into(),
        problem,
    }
}

fn invalid_owner(owner: &str, problem: InputProblem) -> LockError {
    LockError::InvalidOwner {
        owner: owner.into(),
        problem,
    }
}

/// Empty, too long (per [`Limits::max_name_len`]) and control characters are refused with
/// `InvalidName`, by `try_lock` and by `acquire` (at once, without waiting); exactly at the
/// limit is fine; refused calls take nothing.
pub async fn invalid_names_are_refused_with_exact_errors<E: Engine>(engine: &E) {
    let store = engine
        .open(Limits {
            max_name_len: 8,
            ..Limits::default()
        })
        .await;
    let cases = [
        ("", invalid_name("", InputProblem::Empty)),
        // Too long: the error keeps the length, not the value.
        (
            "123456789",
            invalid_name("", InputProblem::TooLong { len: 9, max: 8 }),
        ),
        (
            "a\tb",
            invalid_name(
                "a\tb",
                InputProblem::ControlCharacter { index: 1, ch: '\t' },
            ),
        ),
        (
            "ok\u{7f}",
            invalid_name(
                "ok\u{7f}",
                InputProblem::ControlCharacter {
                    index: 2,
                    ch: '\u{7f}',
                },
            ),
        ),
    ];
    for (name, expected) in &cases {
        let refused = store.try_lock(name, "a", secs(10)).await;
        assert_eq!(refused.err().as_ref(), Some(expected), "try_lock {name:?}");
        let refused = store.acquire(name, "a", secs(10)).timeout(secs(10)).await;
        assert_eq!(refused.err().as_ref(), Some(expected), "acquire {name:?}");
    }
    // Multi-byte characters count in bytes: "ключ" is 8 bytes, "ключи" 10.
    let at_limit = grant(&store, "12345678", "a", secs(10)).await;
    let cyrillic = grant(&store, "ключ", "a", secs(10)).await;
    assert_eq!(
        store.try_lock("ключи", "a", secs(10)).await.err(),
        Some(invalid_name("", InputProblem::TooLong { len: 10, max: 8 }))
    );
    assert!(at_limit.token() != cyrillic.token());
    assert_eq!(holder_of(&store, "123456789").await, None);
}

/// Names beginning with `alk:` in any case are refused with `ReservedName`.
pub async fn names_with_the_reserved_prefix_in_any_case_are_refused<E: Engine>(engine: &E) {
    let store = open(engine).await;
    assert_eq!(alkstore_mem::RESERVED_PREFIX, "alk:");
    for name in ["alk:x", "ALK:x", "Alk:", "aLk:queue"] {
        let expected = LockError::ReservedName { name: name.into() };
        assert_eq!(
            store.try_lock(name, "a", secs(10)).await.err(),
            Some(expected.clone()),
            "try_lock {name:?}"
        );
        assert_eq!(
            store
                .acquire(name, "a", secs(10))
                .timeout(secs(10))
                .await
                .err(),
            Some(expected),
            "acquire {name:?}"
        );
    }
}

/// Empty and too-long owners (per [`Limits::max_owner_len`]) are refused with
/// `InvalidOwner`; owners may hold any UTF-8, control characters included.
pub async fn invalid_owners_are_refused_with_exact_errors<E: Engine>(engine: &E) {
    let store = engine
        .open(Limits {
            max_owner_len: 4,
            ..Limits::default()
        })
        .await;
    assert_eq!(
        store.try_lock("job", "", secs(10)).await.err(),
        Some(invalid_owner("", InputProblem::Empty))
    );
    let too_long = invalid_owner("", InputProblem::TooLong { len: 5, max: 4 });
    assert_eq!(
        store.try_lock("job", "abcde", secs(10)).await.err(),
        Some(too_long.clone())
    );
    assert_eq!(
        too_long.to_string(),
        "invalid owner: it is 5 bytes long, over the limit of 4"
    );
    assert_eq!(
        store
            .acquire("job", "abcde", secs(10))
            .timeout(secs(10))
            .await
            .err(),
        Some(too_long)
    );
    assert_eq!(holder_of(&store, "job").await, None, "nothing was granted");
    let lock = grant(&store, "job", "a\nb", secs(10)).await;
    assert_eq!(lock.owner(), "a\nb");
    let lock = grant(&store, "job2", "abcd", secs(10)).await;
    assert_eq!(lock.owner(), "abcd", "exactly at the limit is fine");
}

/// A zero ttl is refused with `InvalidTtl` by `try_lock` and `acquire`, even when the name
/// is busy (no waiting), and nothing is created.
pub async fn zero_ttl_is_refused_with_invalid_ttl<E: Engine>(engine: &E) {
    let store = open(engine).await;
    let expected = LockError::InvalidTtl {
        ttl: Duration::ZERO,
        problem: TtlProblem::Zero,
    };
    assert_eq!(
        store.try_lock("job", "a", Duration::ZERO).await.err(),
        Some(expected.clone())
    );
    assert_eq!(
        holder_of(&store, "job").await,
        None,
        "no lapsed lease was made"
    );
    let _held = grant(&store, "job", "a", secs(10)).await;
    assert_eq!(
        store
            .acquire("job", "b", Duration::ZERO)
            .timeout(secs(10))
            .await
            .err(),
        Some(expected),
        "refused at once, not queued"
    );
}

/// The name is checked first, then the owner, then the ttl.
pub async fn name_errors_take_precedence_over_owner_and_ttl_errors<E: Engine>(engine: &E) {
    let store = open(engine).await;
    assert_eq!(
        store.try_lock("", "", Duration::ZERO).await.err(),
        Some(invalid_name("", InputProblem::Empty))
    );
    assert_eq!(
        store.try_lock("alk:x", "", Duration::ZERO).await.err(),
        Some(LockError::ReservedName {
            name: "alk:x".into()
        })
    );
    assert_eq!(
        store.try_lock("job", "", Duration::ZERO).await.err(),
        Some(invalid_owner("", InputProblem::Empty))
    );
}
