//! The engine's clock: the horizon, the token ceiling, the anchored estimate.

use super::{S, T0, at, ctx};
use crate::tx::ops::{Clocks, Ctx, try_lock};
use crate::tx::row::{HORIZON, MAX_EXACT, MAX_TTL_US, Meta, Row};

const YEAR: u64 = 31_556_952 * S;

#[test]
fn a_clock_past_the_horizon_is_refused_and_moves_nothing() {
    let mut meta = Meta::default();
    at(&mut meta, T0, |_| ());
    let before = meta;
    // One context's clock 300 years ahead: no decision at that time, the floor stays.
    let far = Clocks {
        date_now: T0 + 300 * YEAR,
        anchored: 0,
        test_clock: false,
    };
    let why = Ctx::new(&mut meta, far).unwrap_err();
    assert!(why.contains("year 2327"), "{why}");
    assert_eq!(meta, before, "nothing moved");
    // Up to the horizon it decides, and `now + ttl` still fits a row.
    let edge = Clocks {
        date_now: HORIZON,
        ..far
    };
    let cx = Ctx::new(&mut meta, edge).unwrap();
    assert_eq!(
        cx.after(MAX_TTL_US),
        MAX_EXACT,
        "the longest lease still fits"
    );
    // A floor already past it (an older version, a forged row): refused, with the way out.
    let mut pinned = Meta {
        floor: MAX_EXACT,
        ..Meta::default()
    };
    let why = Ctx::new(
        &mut pinned,
        Clocks {
            date_now: T0,
            ..far
        },
    )
    .unwrap_err();
    assert!(why.contains("delete the database"), "{why}");
}

#[test]
fn a_counter_at_its_ceiling_refuses_rather_than_repeat_a_token() {
    let mut meta = Meta {
        token: MAX_EXACT - 1,
        floor: T0,
        offset: 0,
    };
    let (first, refused) = at(&mut meta, T0, |cx| {
        (
            try_lock(&mut Row::default(), cx, "a", S, ""),
            cx.refused.clone(),
        )
    })
    .0;
    assert_eq!(first.unwrap().token, MAX_EXACT, "the last token there is");
    assert_eq!(refused, None);
    let (_, refused) = at(&mut meta, T0, |cx| {
        (
            try_lock(&mut Row::default(), cx, "b", S, ""),
            cx.refused.clone(),
        )
    })
    .0;
    let why = refused.expect("the next grant is refused");
    assert!(why.contains("ceiling"), "{why}");
}

#[test]
fn the_anchored_estimate_keeps_time_moving_when_every_clock_steps_back() {
    let mut meta = Meta::default();
    let mut row = Row::default();
    let g = at(&mut meta, T0, |cx| try_lock(&mut row, cx, "a", 3 * S, ""))
        .0
        .unwrap();
    // Every Date.now() stepped back a minute; this context's own estimate (its last
    // reading, plus 5 s of monotonic time since) says the lease lapsed.
    let clocks = Clocks {
        date_now: T0 - 60 * S,
        anchored: T0 + 5 * S,
        test_clock: true,
    };
    let mut cx = Ctx::new(&mut meta, clocks).unwrap();
    assert_eq!(cx.now, T0 + 5 * S);
    let next = try_lock(&mut row, &mut cx, "b", S, "").expect("the lease lapsed");
    assert!(next.token > g.token);
    // Without an estimate (a fresh context), decisions stay at the floor.
    let cx = ctx(&mut meta, T0 - 60 * S, true);
    assert_eq!(cx.now, T0 + 5 * S);
}
