//! The request order (tickets numbered from the token counter) and the one-transaction steal.

use super::{S, T0, at, granted, step};
use crate::tx::ops::{self, Notice, Stepped, release, try_lock};
use crate::tx::row::{MAX_QUEUE, Meta, Row};
use crate::tx::steal::steal;

#[test]
fn tickets_of_every_name_are_numbered_in_request_order_and_tokens_stay_above_them() {
    let mut meta = Meta::default();
    let names = ["c", "a", "b"];
    let mut rows: Vec<Row> = names.iter().map(|_| Row::default()).collect();
    for row in &mut rows {
        at(&mut meta, T0, |cx| try_lock(row, cx, "h", 100 * S, ""))
            .0
            .unwrap();
    }
    // Interleaved across names, all within one microsecond of the clock.
    let order = [(0, "c1"), (1, "a1"), (0, "c2"), (2, "b1"), (1, "a2")];
    let mut seqs = Vec::new();
    for (i, id) in order {
        at(&mut meta, T0, |cx| {
            ops::step(&mut rows[i], cx, &step(id, 0))
        });
        seqs.push(rows[i].queue.last().unwrap().seq);
    }
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    // Sorting every name's tickets by number gives the request order back.
    let mut all: Vec<(u64, &str)> = rows
        .iter()
        .flat_map(|r| r.queue.iter().map(|t| (t.seq, t.id.as_str())))
        .collect();
    all.sort_unstable();
    let ids: Vec<&str> = all.iter().map(|t| t.1).collect();
    assert_eq!(ids, ["c1", "a1", "c2", "b1", "a2"]);
    // The next grant's token is above every ticket's number; a hand-off keeps its number.
    let holder = rows[0].lease.clone().unwrap();
    let (released, _) = at(&mut meta, T0, |cx| {
        release(&mut rows[0], cx, holder.token, "h")
    });
    assert!(released);
    let handed = rows[0].lease.as_ref().unwrap();
    assert_eq!((handed.grantee.as_str(), handed.seq), ("c1", seqs[0]));
    assert!(handed.token > seqs[4]);
    // The next ticket of the name is first in line now.
    assert_eq!(rows[0].queue[0].id, "c2");
}

#[test]
fn steal_ends_the_holder_and_grants_the_thief_in_the_same_transaction_ahead_of_the_queue() {
    let (mut meta, mut row) = (Meta::default(), Row::default());
    let h = at(&mut meta, T0, |cx| try_lock(&mut row, cx, "h", 100 * S, ""))
        .0
        .unwrap();
    for id in ["w1", "w2"] {
        at(&mut meta, T0, |cx| ops::step(&mut row, cx, &step(id, 0)));
    }
    let (stolen, notices) = at(&mut meta, T0 + S, |cx| {
        steal(&mut row, cx, "job", "thief", 5 * S, "r1")
    });
    assert_eq!(stolen.ended.map(|l| l.token), Some(h.token));
    assert!(stolen.granted.token > h.token);
    assert_eq!(stolen.granted.deadline, T0 + 6 * S);
    assert_eq!(
        notices,
        vec![Notice::Ended("job".into())],
        "the holder is told"
    );
    let lease = row.lease.as_ref().unwrap();
    assert!(lease.claimed && lease.owner == "thief" && lease.grantee == "r1");
    let queued: Vec<_> = row.queue.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(queued, ["w1", "w2"], "the queue is untouched");
    // Nobody else gets the name: not a try_lock, not the head waiter.
    assert!(
        at(&mut meta, T0 + S, |cx| try_lock(&mut row, cx, "x", S, ""))
            .0
            .is_err()
    );
    let (s, _) = at(&mut meta, T0 + S, |cx| {
        ops::step(&mut row, cx, &step("w1", 0))
    });
    assert_eq!(
        s,
        Stepped::Queued {
            head_deadline: Some(T0 + 6 * S)
        }
    );
    // The old holder's release answers false and frees nothing; the thief's hands on to w1.
    assert!(!at(&mut meta, T0 + S, |cx| release(&mut row, cx, h.token, "h")).0);
    assert_eq!(row.lease.as_ref().unwrap().owner, "thief");
    let g = stolen.granted;
    assert!(
        at(&mut meta, T0 + 2 * S, |cx| release(
            &mut row, cx, g.token, "thief"
        ))
        .0
    );
    let (s, _) = at(&mut meta, T0 + 2 * S, |cx| {
        ops::step(&mut row, cx, &step("w1", 0))
    });
    assert!(granted(s).token > g.token);
}

#[test]
fn steal_puts_a_hand_off_not_picked_up_back_at_the_head_with_its_number() {
    let (mut meta, mut row) = (Meta::default(), Row::default());
    let h = at(&mut meta, T0, |cx| try_lock(&mut row, cx, "h", 100 * S, ""))
        .0
        .unwrap();
    for id in ["w1", "w2"] {
        at(&mut meta, T0, |cx| ops::step(&mut row, cx, &step(id, 0)));
    }
    let w1_seq = row.queue[0].seq;
    at(&mut meta, T0 + S, |cx| release(&mut row, cx, h.token, "h"));
    assert_eq!(row.lease.as_ref().unwrap().grantee, "w1", "handed to w1");
    let (stolen, notices) = at(&mut meta, T0 + S, |cx| {
        steal(&mut row, cx, "job", "thief", 5 * S, "r1")
    });
    assert_eq!(stolen.ended, None, "w1 never held it");
    assert!(notices.is_empty(), "{notices:?}");
    let queued: Vec<_> = row.queue.iter().map(|t| (t.id.as_str(), t.seq)).collect();
    assert_eq!(
        queued[0],
        ("w1", w1_seq),
        "w1 is first in line again, in its place"
    );
    assert_eq!(queued[1].0, "w2");
    // w1's next step finds itself queued, first; it is served after the thief.
    let (s, _) = at(&mut meta, T0 + S, |cx| {
        ops::step(&mut row, cx, &step("w1", 0))
    });
    assert_eq!(
        s,
        Stepped::Queued {
            head_deadline: Some(T0 + 6 * S)
        }
    );
    let g = stolen.granted;
    at(&mut meta, T0 + 2 * S, |cx| {
        release(&mut row, cx, g.token, "thief")
    });
    let (s, _) = at(&mut meta, T0 + 2 * S, |cx| {
        ops::step(&mut row, cx, &step("w1", 0))
    });
    assert!(granted(s).token > g.token);
}

#[test]
fn steal_of_a_free_or_lapsed_name_is_a_grant_and_a_full_queue_drops_the_hand_off() {
    let (mut meta, mut row) = (Meta::default(), Row::default());
    let (free, notices) = at(&mut meta, T0, |cx| steal(&mut row, cx, "n", "a", S, "r0"));
    assert!(free.ended.is_none() && notices.is_empty());
    // Lapsed: its holder is told it lapsed (not that it was ended).
    let (later, notices) = at(&mut meta, T0 + 2 * S, |cx| {
        steal(&mut row, cx, "n", "b", 100 * S, "r1")
    });
    assert!(later.ended.is_none());
    assert_eq!(notices, vec![Notice::Lapsed(free.granted.token)]);
    // A full queue behind a hand-off: the hand-off's waiter cannot go back in line.
    let g = later.granted;
    for i in 0..MAX_QUEUE {
        at(&mut meta, T0 + 2 * S, |cx| {
            ops::step(&mut row, cx, &step(&format!("w{i}"), 0))
        });
    }
    at(&mut meta, T0 + 2 * S, |cx| {
        release(&mut row, cx, g.token, "b")
    });
    at(&mut meta, T0 + 2 * S, |cx| {
        ops::step(&mut row, cx, &step("late", 0))
    });
    assert_eq!(row.queue.len(), MAX_QUEUE, "the queue filled up again");
    at(&mut meta, T0 + 2 * S, |cx| {
        steal(&mut row, cx, "n", "c", S, "r2")
    });
    assert_eq!(row.queue.len(), MAX_QUEUE);
    assert!(
        row.ticket("w0").is_none(),
        "w0 joins the back at its next step"
    );
    assert_eq!(row.lease.as_ref().unwrap().owner, "c");
}
