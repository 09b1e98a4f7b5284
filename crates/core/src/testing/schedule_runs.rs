//! Scheduled runs for runtime tests: a prompt schedule whose own fire is far away (07:00 on
//! January 1st, Berlin), run now through the facade, as the operator.

use souz_protocol::chat::ChatSettings;
use souz_protocol::schedules::{NewSchedule, ScheduleAction, ScheduleEnvelope, ScheduleRun};

use crate::chat::ChatUser;
use crate::runtime::RuntimeHandle;

/// Creates the schedule `name` that prompts `prompt` (within `envelope`) and runs it now: its
/// id and the run started.
pub async fn run_prompt_now(
    handle: &RuntimeHandle,
    name: &str,
    prompt: &str,
    envelope: Option<ScheduleEnvelope>,
) -> (String, ScheduleRun) {
    let operator = ChatUser(crate::LOCAL_USER.to_owned());
    let schedule = handle
        .create_schedule(
            &operator,
            NewSchedule {
                name: name.into(),
                spec: "0 7 1 1 *".into(),
                zone: Some("Europe/Berlin".into()),
                action: ScheduleAction::Prompt {
                    prompt: prompt.into(),
                    settings: ChatSettings::default(),
                },
                missed: None,
                overlap: None,
                envelope,
                enabled: None,
            },
        )
        .await
        .expect("the schedule is created");
    let run = handle
        .run_schedule_now(&operator, &schedule.id)
        .await
        .expect("the schedule runs");
    (schedule.id, run)
}
