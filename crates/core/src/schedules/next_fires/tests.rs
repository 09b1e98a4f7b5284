use chrono::{TimeZone, Utc};
use souz_protocol::schedules::SchedulePatch;

use super::*;
use crate::schedules::Schedules;
use crate::schedules::store::load_schedule;
use crate::schedules::tests::{new, service};
use crate::store::Store;

fn utc(year: i32, month: u32, day: u32, hour: u32, minute: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(year, month, day, hour, minute, 0)
        .single()
        .unwrap()
}

async fn store_of(dir: &tempfile::TempDir) -> Store {
    Store::open(dir.path().join("souz.db")).await.unwrap()
}

/// Loads the next fires under `rules`.
async fn load_under(store: &Store, rules: &str) -> (Fires, Source) {
    let rules = rules.to_owned();
    store.write(move |tx| load(tx, &rules)).await.unwrap()
}

/// The row's cached next fire, and the one its spec gives from where deciding got to.
async fn cached_and_computed(
    store: &Store,
    id: &str,
) -> (Option<DateTime<Utc>>, Option<DateTime<Utc>>) {
    let id = id.to_owned();
    let stored = store
        .read(move |c| load_schedule(c, None, &id))
        .await
        .unwrap()
        .unwrap();
    let computed = if stored.schedule.enabled {
        compute(
            &stored.schedule.spec,
            &stored.schedule.zone,
            stored.handled_until,
        )
    } else {
        None
    };
    (stored.schedule.next_fire, computed)
}

async fn set_cached(store: &Store, id: &str, at: Option<DateTime<Utc>>) {
    let id = id.to_owned();
    store
        .write(move |tx| {
            tx.execute(
                "UPDATE schedules SET next_fire = ?2 WHERE id = ?1",
                params![id, at.map(to_time)],
            )?;
            Ok::<_, StoreError>(())
        })
        .await
        .unwrap();
}

async fn create(schedules: &Schedules, spec: &str) -> String {
    schedules
        .create(crate::LOCAL_USER, new(spec, None), "Europe/Berlin")
        .await
        .unwrap()
        .id
}

#[tokio::test]
async fn the_cache_is_read_under_the_same_rules_and_recomputed_under_others() {
    let dir = tempfile::tempdir().unwrap();
    let schedules = service(&dir).await;
    let daily = create(&schedules, "0 9 * * *").await;
    let store = store_of(&dir).await;
    // The service clock reads 2026-06-01 12:00 UTC: 09:00 in Berlin (CEST) is 07:00 UTC.
    let right = utc(2026, 6, 2, 7, 0);

    // Nothing recorded yet (a database from before the cache, or a new one): recomputed, and
    // the rules are recorded.
    let (fires, source) = load_under(&store, "build A").await;
    assert_eq!(
        (fires, source),
        (vec![(daily.clone(), right)], Source::Recomputed)
    );

    // Under the same rules the cache is what is read: a value no spec gives proves it.
    let planted = utc(2030, 1, 1, 0, 0);
    set_cached(&store, &daily, Some(planted)).await;
    let (fires, source) = load_under(&store, "build A").await;
    assert_eq!(
        (fires, source),
        (vec![(daily.clone(), planted)], Source::Cached)
    );

    // Other rules (an upgrade): every enabled schedule is computed again and written back.
    let (fires, source) = load_under(&store, "build B").await;
    assert_eq!(
        (fires, source),
        (vec![(daily.clone(), right)], Source::Recomputed)
    );
    assert_eq!(
        cached_and_computed(&store, &daily).await,
        (Some(right), Some(right))
    );
    let (_, source) = load_under(&store, "build B").await;
    assert_eq!(source, Source::Cached);
}

#[tokio::test]
async fn a_recompute_leaves_out_paused_and_finished_schedules_and_clears_their_stale_fires() {
    let dir = tempfile::tempdir().unwrap();
    let schedules = service(&dir).await;
    let owner = crate::LOCAL_USER;
    let paused = create(&schedules, "0 9 * * *").await;
    schedules.set_enabled(owner, &paused, false).await.unwrap();
    let once = create(&schedules, "in 2 hours").await;
    let store = store_of(&dir).await;
    // The one-shot was decided past its instant: it never fires again, but its row still
    // names a fire (written by a build whose rules gave one).
    let stale = utc(2026, 6, 1, 14, 0);
    let (id, until) = (once.clone(), utc(2026, 6, 1, 15, 0));
    store
        .write(move |tx| crate::schedules::store::set_handled(tx, &id, until, Some(stale)))
        .await
        .unwrap();

    let (fires, source) = load_under(&store, "another build").await;
    assert_eq!(source, Source::Recomputed);
    assert!(fires.is_empty(), "{fires:?}");
    assert_eq!(cached_and_computed(&store, &once).await, (None, None));
    assert_eq!(cached_and_computed(&store, &paused).await, (None, None));
}

#[tokio::test]
async fn every_write_of_a_schedule_keeps_the_cache_equal_to_its_spec() {
    let dir = tempfile::tempdir().unwrap();
    let schedules = service(&dir).await;
    let owner = crate::LOCAL_USER;
    let store = store_of(&dir).await;
    let id = create(&schedules, "30 8 * * 1-5").await;
    assert_eq!(
        cached_and_computed(&store, &id).await,
        (Some(utc(2026, 6, 2, 6, 30)), Some(utc(2026, 6, 2, 6, 30)))
    );
    // Deciding got only to 06:00 on Monday (the engine has not yet woken for the 06:30 fire
    // that is due): a save for a change that does not touch the spec (a rename) keeps that
    // fire, the one the engine decides next, not the first one after the clock.
    let key = id.clone();
    store
        .write(move |tx| {
            tx.execute(
                "UPDATE schedules SET handled_until = ?2, next_fire = ?3 WHERE id = ?1",
                params![
                    key,
                    to_time(utc(2026, 6, 1, 6, 0)),
                    to_time(utc(2026, 6, 1, 6, 30))
                ],
            )?;
            Ok::<_, StoreError>(())
        })
        .await
        .unwrap();
    let renamed = SchedulePatch {
        name: Some("Morning".to_owned()),
        ..SchedulePatch::default()
    };
    let saved = schedules.patch(owner, &id, renamed).await.unwrap();
    assert_eq!(saved.next_fire, Some(utc(2026, 6, 1, 6, 30)));
    let (cached, computed) = cached_and_computed(&store, &id).await;
    assert_eq!(cached, computed);

    for step in ["pause", "resume", "respec"] {
        match step {
            "pause" => drop(schedules.set_enabled(owner, &id, false).await.unwrap()),
            "resume" => drop(schedules.set_enabled(owner, &id, true).await.unwrap()),
            _ => {
                let patch = SchedulePatch {
                    spec: Some("0 18 * * *".to_owned()),
                    ..SchedulePatch::default()
                };
                drop(schedules.patch(owner, &id, patch).await.unwrap());
            }
        }
        let (cached, computed) = cached_and_computed(&store, &id).await;
        assert_eq!(cached, computed, "after {step}");
        assert_eq!(cached.is_some(), step != "pause", "after {step}");
    }
}
