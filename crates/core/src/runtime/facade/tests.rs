//! The facade's one error type: what each domain error becomes, and facade calls that decide
//! an error themselves.

use souz_protocol::ErrorCode;

use super::ServiceError;
use crate::approvals::ApprovalError;
use crate::chat::ChatError;
use crate::store::StoreError;
use crate::testing::TestRuntime;

#[test]
fn domain_errors_keep_their_kind_and_code() {
    assert_eq!(
        ServiceError::from(ChatError::ChatNotFound),
        ServiceError::NotFound {
            code: ErrorCode::ChatNotFound,
            message: "Chat not found.".into()
        }
    );
    assert!(matches!(
        ServiceError::from(ChatError::Paused),
        ServiceError::Conflict {
            code: ErrorCode::Paused,
            ..
        }
    ));
    assert_eq!(
        ServiceError::from(ApprovalError::AlreadyDecided {
            id: "a1".into(),
            status: "approved"
        }),
        ServiceError::Conflict {
            code: ErrorCode::Conflict,
            message: "approval `a1` is already approved".into()
        }
    );
    assert_eq!(
        ServiceError::from(ApprovalError::Store(StoreError::Closed)),
        ServiceError::Unavailable
    );
    // Details of failures inside stay in the variant that never reaches the wire as such.
    assert_eq!(
        ServiceError::from(ChatError::StartFailed("engine gone".into())),
        ServiceError::StartFailed("engine gone".into())
    );
    assert!(matches!(
        ServiceError::from(StoreError::Corrupt("row 5".into())),
        ServiceError::Internal(detail) if detail.contains("row 5")
    ));
}

#[tokio::test]
async fn facade_calls_refuse_with_the_one_error_type() {
    let runtime = TestRuntime::builder().start().await;
    let handle = runtime.handle();
    assert_eq!(
        handle.revoke_client("nobody").await,
        Err(ServiceError::NotFound {
            code: ErrorCode::NotFound,
            message: "No active client nobody.".into()
        })
    );
    assert!(matches!(
        handle.prove_identity("key", "not hex", "127.0.0.1:8383"),
        Err(ServiceError::Invalid(_))
    ));
    let nonce = "ab".repeat(16);
    assert!(matches!(
        handle.prove_identity("unknown-key", &nonce, "127.0.0.1:8383"),
        Err(ServiceError::NotFound { .. })
    ));
    assert!(handle.redeem_ui_code("never-issued").is_none());
    let code = handle.issue_ui_code().unwrap();
    assert_eq!(
        handle.redeem_ui_code(&code.code).as_deref(),
        Some(runtime.token())
    );
    assert!(
        handle.redeem_ui_code(&code.code).is_none(),
        "a code works once"
    );
}

#[tokio::test]
async fn a_pause_records_who_flipped_it_within_bounds() {
    let runtime = TestRuntime::builder().start().await;
    let handle = runtime.handle();
    let mut events = handle.events().subscribe();
    assert!(handle.set_paused(true, "a b/c-d_e").await.unwrap().paused);
    let event = events.recv().await.unwrap();
    assert_eq!(
        event.event,
        souz_protocol::RuntimeEvent::DaemonPaused {
            via: "abc-d_e".into()
        }
    );
    assert!(!handle.set_paused(false, "!!!").await.unwrap().paused);
    let event = events.recv().await.unwrap();
    assert_eq!(
        event.event,
        souz_protocol::RuntimeEvent::DaemonResumed { via: "api".into() }
    );
}
