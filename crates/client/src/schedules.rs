//! The calls of `/v1/schedules`: list, create, preview, show, change, delete, pause, resume,
//! run now, and a schedule's run history. Ids go into paths percent-encoded; a spec and a zone
//! go into the preview's query string the same way.

use souz_protocol::schedules::{
    NewSchedule, Schedule, ScheduleList, SchedulePatch, SchedulePreview, ScheduleRun,
    ScheduleRunList,
};

use crate::calls::encode_segment as encode;
use crate::{ClientError, DaemonClient};

impl DaemonClient {
    /// The caller's schedules, by name.
    pub async fn schedules(&self) -> Result<ScheduleList, ClientError> {
        self.get("/v1/schedules").await
    }

    /// Creates a schedule (an invalid spec or zone is refused and nothing is stored).
    pub async fn create_schedule(&self, schedule: &NewSchedule) -> Result<Schedule, ClientError> {
        self.post("/v1/schedules", schedule).await
    }

    /// The next fires of `spec` read in `zone` (absent: the person's), storing nothing.
    pub async fn preview_schedule(
        &self,
        spec: &str,
        zone: Option<&str>,
    ) -> Result<SchedulePreview, ClientError> {
        let mut path = format!("/v1/schedules/preview?spec={}", encode(spec));
        if let Some(zone) = zone {
            path.push_str("&zone=");
            path.push_str(&encode(zone));
        }
        self.get(&path).await
    }

    /// One schedule.
    pub async fn schedule(&self, id: &str) -> Result<Schedule, ClientError> {
        self.get(&format!("/v1/schedules/{}", encode(id))).await
    }

    /// Changes a schedule; absent fields keep their value.
    pub async fn patch_schedule(
        &self,
        id: &str,
        patch: &SchedulePatch,
    ) -> Result<Schedule, ClientError> {
        self.patch(&format!("/v1/schedules/{}", encode(id)), patch)
            .await
    }

    /// Deletes a schedule and its run history (its chat stays).
    pub async fn delete_schedule(&self, id: &str) -> Result<(), ClientError> {
        self.delete(&format!("/v1/schedules/{}", encode(id))).await
    }

    /// Runs a schedule now, as an occurrence at the current time: the claimed run.
    pub async fn run_schedule(&self, id: &str) -> Result<ScheduleRun, ClientError> {
        self.post(
            &format!("/v1/schedules/{}/run", encode(id)),
            &serde_json::json!({}),
        )
        .await
    }

    /// Pauses (`false`) or resumes (`true`) a schedule.
    pub async fn set_schedule_enabled(
        &self,
        id: &str,
        enabled: bool,
    ) -> Result<Schedule, ClientError> {
        let action = if enabled { "resume" } else { "pause" };
        self.post(
            &format!("/v1/schedules/{}/{action}", encode(id)),
            &serde_json::json!({}),
        )
        .await
    }

    /// A schedule's runs, newest first (at most `limit`).
    pub async fn schedule_runs(
        &self,
        id: &str,
        limit: u32,
    ) -> Result<ScheduleRunList, ClientError> {
        self.get(&format!("/v1/schedules/{}/runs?limit={limit}", encode(id)))
            .await
    }
}
