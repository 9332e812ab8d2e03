//! The report at the end of `make bench`: the medians of this run, the ratios between them
//! and the targets.

use crate::report::{self, Row};
use crate::samples::median;

/// "registry 1.50x faster" or "registry 1.20x slower", from the two times.
fn registry_vs(theirs: f64, registry: f64) -> String {
    if theirs >= registry {
        format!("registry {:.2}x faster", theirs / registry)
    } else {
        format!("registry {:.2}x slower", registry / theirs)
    }
}

/// The report at the end: medians and ratios next to the targets; `contenders` are the
/// (id, label) of the maps in the threaded benchmarks.
pub fn report(contenders: &[(&str, &str)]) {
    let m = |id: &str| median(id).unwrap_or(f64::NAN);
    let ns = "ns/op";
    let floor = m("floor");
    let manual = m("registry/manual");
    let tokio = m("registry/tokio");
    let hand = m("hand-rolled");
    let dash = m("dashmap");
    let busy = m("busy");

    let mut rows = vec![
        Row::new(
            "floor",
            "floor: hashbrown + spin insert/remove (4096 names)",
            floor,
            ns,
        )
        .ratio("1.00x floor".into()),
        Row::new(
            "floor/std",
            "floor with std::sync::Mutex",
            m("floor/std"),
            ns,
        )
        .ratio(format!("{:.2}x floor", m("floor/std") / floor)),
        Row::new(
            "cycle/manual",
            "try_lock + release, ManualClock",
            manual,
            ns,
        )
        .ratio(format!("{:.2}x floor", manual / floor))
        .target("<= 1.5x floor", manual / floor <= 1.5),
        Row::new(
            "cycle/drop",
            "try_lock + drop of Lock, ManualClock",
            m("registry/drop"),
            ns,
        )
        .ratio(format!("{:.2}x floor", m("registry/drop") / floor)),
        Row::new("cycle/tokio", "try_lock + release, TokioClock", tokio, ns)
            .ratio(format!("{:.2}x floor", tokio / floor))
            .target("<= 1.5x floor", tokio / floor <= 1.5),
    ];
    for (key, label, theirs) in [
        (
            "hand-rolled",
            "hand-rolled Mutex<HashMap> lease map (reads Instant::now)",
            hand,
        ),
        ("dashmap", "DashMap lease map (reads Instant::now)", dash),
    ] {
        rows.push(
            Row::new(key, label, theirs, ns)
                .ratio(format!(
                    "{} (TokioClock: {})",
                    registry_vs(theirs, manual),
                    registry_vs(theirs, tokio)
                ))
                .target("registry >= 1.8x faster", theirs / manual >= 1.8),
        );
    }
    rows.push(
        Row::new("busy", "busy try_lock (4096 held names)", busy, ns)
            .target("<= 15 ns", busy <= 15.0),
    );
    for (key, label) in [
        ("renew", "renew"),
        ("holder", "holder"),
        ("is_held", "is_held"),
    ] {
        rows.push(Row::new(key, label, m(key), ns));
    }
    for &(id, label) in contenders {
        let (one, two) = (
            m(&format!("disjoint/{id}/1")),
            m(&format!("disjoint/{id}/2")),
        );
        rows.push(Row::new(
            &format!("disjoint1/{id}"),
            &format!("1 thread, disjoint names: {label}"),
            one,
            ns,
        ));
        let row = Row::new(
            &format!("disjoint2/{id}"),
            &format!("2 threads, disjoint names: {label}"),
            two,
            ns,
        )
        .ratio(format!("{:.2}x the throughput of 1 thread", one / two));
        rows.push(if id == "registry" {
            row.target(">= 1.6x", one / two >= 1.6)
        } else {
            row
        });
    }
    let shared_registry = m("shared4/registry");
    for &(id, label) in contenders {
        let value = m(&format!("shared4/{id}"));
        let ratio = match id {
            "registry" => String::new(),
            "floor-std" => format!(
                "{:.2}x the spin floor's time; {}",
                value / m("shared4/floor"),
                registry_vs(value, shared_registry)
            ),
            _ => registry_vs(value, shared_registry),
        };
        rows.push(
            Row::new(
                &format!("shared4/{id}"),
                &format!("4 threads on 2 cores, 64 shared names: {label}"),
                value,
                ns,
            )
            .ratio(ratio),
        );
    }
    let (k1, m1) = (m("scale/1000"), m("scale/1000000"));
    rows.push(Row::new("scale/1000", "scale: 1,000 live leases", k1, ns).ratio("1.00x".into()));
    rows.push(
        Row::new("scale/1000000", "scale: 1,000,000 live leases", m1, ns)
            .ratio(format!("{:.2}x the 1k cost", m1 / k1))
            .target("<= 2x", m1 / k1 <= 2.0),
    );
    let (short, long) = (m("cancel/2000"), m("cancel/32000"));
    rows.push(Row::new(
        "cancel/2000",
        "cancel a queued waiter, queue of 2,000",
        short,
        ns,
    ));
    rows.push(
        Row::new(
            "cancel/32000",
            "cancel a queued waiter, queue of 32,000",
            long,
            ns,
        )
        .ratio(format!("{:.2}x the cost in a queue of 2,000", long / short))
        .target("O(1): <= 2x", long / short <= 2.0),
    );
    report::publish(
        "speed",
        "alkstore-mem speed (median ns/op over criterion samples; ratios within this run)",
        &rows,
    );
}
