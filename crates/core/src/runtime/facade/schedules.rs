//! Scheduled runs for the adapters: create, list, show, change, pause and resume, delete, run
//! now, history, and the preview of the next fires. Every call acts for one [`ChatUser`]; a
//! foreign id is "not found". A schedule without a zone takes the person's time zone setting.

use souz_protocol::ErrorCode;
use souz_protocol::schedules::{
    NewSchedule, Schedule, ScheduleList, SchedulePatch, SchedulePreview, ScheduleRun,
    ScheduleRunList,
};

use super::ServiceError;
use crate::chat::ChatUser;
use crate::runtime::RuntimeHandle;
use crate::schedules::ScheduleError;

pub(crate) use crate::schedules::MAX_LISTED_RUNS;

impl From<ScheduleError> for ServiceError {
    fn from(error: ScheduleError) -> Self {
        match error {
            ScheduleError::Spec(error) => Self::Invalid(error.to_string()),
            ScheduleError::Invalid(message) => Self::Invalid(message),
            ScheduleError::NotFound => Self::NotFound {
                code: ErrorCode::NotFound,
                message: error.to_string(),
            },
            ScheduleError::Store(error) => error.into(),
        }
    }
}

impl RuntimeHandle {
    /// The person's time zone setting (the zone of a schedule that names none).
    async fn person_zone(&self, user: &ChatUser) -> Result<String, ServiceError> {
        Ok(self.chats().settings(user).await?.time_zone)
    }

    /// The user's schedules, by name.
    pub async fn list_schedules(&self, user: &ChatUser) -> Result<ScheduleList, ServiceError> {
        Ok(ScheduleList {
            items: self.schedules().list(&user.0).await?,
        })
    }

    /// Creates a schedule; an invalid spec or zone stores nothing.
    pub async fn create_schedule(
        &self,
        user: &ChatUser,
        request: NewSchedule,
    ) -> Result<Schedule, ServiceError> {
        let zone = match &request.zone {
            Some(_) => String::new(),
            None => self.person_zone(user).await?,
        };
        Ok(self.schedules().create(&user.0, request, &zone).await?)
    }

    /// One schedule.
    pub async fn schedule(&self, user: &ChatUser, id: &str) -> Result<Schedule, ServiceError> {
        Ok(self.schedules().get(&user.0, id).await?)
    }

    /// Changes a schedule.
    pub async fn patch_schedule(
        &self,
        user: &ChatUser,
        id: &str,
        patch: SchedulePatch,
    ) -> Result<Schedule, ServiceError> {
        Ok(self.schedules().patch(&user.0, id, patch).await?)
    }

    /// Pauses (`false`) or resumes (`true`) a schedule.
    pub async fn set_schedule_enabled(
        &self,
        user: &ChatUser,
        id: &str,
        enabled: bool,
    ) -> Result<Schedule, ServiceError> {
        Ok(self.schedules().set_enabled(&user.0, id, enabled).await?)
    }

    /// Deletes a schedule and its history.
    pub async fn delete_schedule(&self, user: &ChatUser, id: &str) -> Result<(), ServiceError> {
        Ok(self.schedules().delete(&user.0, id).await?)
    }

    /// Runs a schedule now with its policies.
    pub async fn run_schedule_now(
        &self,
        user: &ChatUser,
        id: &str,
    ) -> Result<ScheduleRun, ServiceError> {
        Ok(self.schedules().run_now(&user.0, id).await?)
    }

    /// A schedule's runs, newest first.
    pub async fn schedule_runs(
        &self,
        user: &ChatUser,
        id: &str,
        limit: usize,
    ) -> Result<ScheduleRunList, ServiceError> {
        Ok(self.schedules().runs(&user.0, id, limit).await?)
    }

    /// The next fires of a spec (the person's zone when none is given).
    pub async fn preview_schedule(
        &self,
        user: &ChatUser,
        spec: &str,
        zone: Option<&str>,
    ) -> Result<SchedulePreview, ServiceError> {
        let zone = match zone {
            Some(zone) => zone.to_owned(),
            None => self.person_zone(user).await?,
        };
        Ok(self.schedules().preview(spec, &zone)?)
    }
}
