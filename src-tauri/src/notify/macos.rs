//! macOS: approval, question and turn-end notifications through UNUserNotificationCenter, whose
//! categories give approvals real side-by-side Approve and Deny buttons (the plugin's
//! NSUserNotification path folds them into an "Options" menu) and a turn's changes an Undo
//! button. Needs the signed `.app` (a bundle identifier); the plugin still posts the plain
//! notifications.
//!
//! Requests are named `approval.<id>`, `question.<option id>`, `open.<route>` or
//! `turn.<execution id>.<chat id>` ([`super::Subject`]). The
//! delegate hands every response to [`super::respond`] through the app handle stored at
//! [`init`]; `UNNotificationDefaultActionIdentifier` (a click on the body) opens the window.
#![allow(unsafe_code)] // Objective-C calls through objc2; each block says what it relies on.

use std::sync::OnceLock;

use block2::{DynBlock, RcBlock};
use objc2::rc::Retained;
use objc2::runtime::{NSObject, NSObjectProtocol, ProtocolObject};
use objc2::{AnyThread, define_class, msg_send};
use objc2_foundation::{NSArray, NSDictionary, NSError, NSSet, NSString};
use objc2_user_notifications::{
    UNAuthorizationOptions, UNMutableNotificationContent, UNNotification, UNNotificationAction,
    UNNotificationActionOptions, UNNotificationCategory, UNNotificationCategoryOptions,
    UNNotificationDefaultActionIdentifier, UNNotificationPresentationOptions,
    UNNotificationRequest, UNNotificationResponse, UNUserNotificationCenter,
    UNUserNotificationCenterDelegate,
};
use tauri::{AppHandle, Runtime};

use super::{APPROVAL_ACTIONS, APPROVE, DENY, TURN_ACTIONS, UNDO};

/// Where responses go: (request identifier, action id).
type Responder = Box<dyn Fn(String, String) + Send + Sync>;
static RESPONDER: OnceLock<Responder> = OnceLock::new();

define_class!(
    // SAFETY: NSObject has no subclassing requirements; the class holds no instance state.
    #[unsafe(super(NSObject))]
    #[name = "SouzNotificationDelegate"]
    struct Delegate;

    unsafe impl NSObjectProtocol for Delegate {}

    unsafe impl UNUserNotificationCenterDelegate for Delegate {
        #[unsafe(method(userNotificationCenter:didReceiveNotificationResponse:withCompletionHandler:))]
        fn did_receive(
            &self,
            _center: &UNUserNotificationCenter,
            response: &UNNotificationResponse,
            completion: &DynBlock<dyn Fn()>,
        ) {
            let action = response.actionIdentifier().to_string();
            let identifier = response.notification().request().identifier().to_string();
            if let Some(responder) = RESPONDER.get() {
                // SAFETY: reading a constant NSString the framework exports.
                let default_action = unsafe { UNNotificationDefaultActionIdentifier }.to_string();
                let action = if action == default_action {
                    "tap".to_owned()
                } else {
                    action
                };
                responder(identifier, action);
            }
            completion.call(());
        }

        #[unsafe(method(userNotificationCenter:willPresentNotification:withCompletionHandler:))]
        fn will_present(
            &self,
            _center: &UNUserNotificationCenter,
            _notification: &UNNotification,
            completion: &DynBlock<dyn Fn(UNNotificationPresentationOptions)>,
        ) {
            // Show approvals even while a Souz window is in front.
            completion.call((UNNotificationPresentationOptions::Banner
                | UNNotificationPresentationOptions::List
                | UNNotificationPresentationOptions::Sound,));
        }
    }
);

impl Delegate {
    fn new() -> Retained<Self> {
        // SAFETY: `init` on a freshly allocated NSObject subclass without ivars.
        unsafe { msg_send![Self::alloc(), init] }
    }
}

static DELEGATE: OnceLock<usize> = OnceLock::new();

/// Registers the categories (approvals: two buttons; a turn's changes: Undo), sets the delegate
/// and asks for permission.
pub fn init<R: Runtime>(app: &AppHandle<R>) {
    let handle = app.clone();
    let _ = RESPONDER.set(Box::new(move |identifier, action| {
        if let Some(subject) = super::Subject::from_identifier(&identifier) {
            super::respond(&handle, subject, &action);
        }
    }));
    let center = UNUserNotificationCenter::currentNotificationCenter();
    let approve = UNNotificationAction::actionWithIdentifier_title_options(
        &NSString::from_str(APPROVE),
        &NSString::from_str("Approve"),
        UNNotificationActionOptions::empty(),
    );
    let deny = UNNotificationAction::actionWithIdentifier_title_options(
        &NSString::from_str(DENY),
        &NSString::from_str("Deny"),
        UNNotificationActionOptions::Destructive,
    );
    let category = UNNotificationCategory::categoryWithIdentifier_actions_intentIdentifiers_options(
        &NSString::from_str(APPROVAL_ACTIONS),
        &NSArray::from_retained_slice(&[approve, deny]),
        &NSArray::new(),
        UNNotificationCategoryOptions::CustomDismissAction,
    );
    // Undo is not destructive: it never overwrites a file changed since (the undo refuses and
    // the window shows the conflict), and it can itself be undone.
    let undo = UNNotificationAction::actionWithIdentifier_title_options(
        &NSString::from_str(UNDO),
        &NSString::from_str("Undo"),
        UNNotificationActionOptions::empty(),
    );
    let turn = UNNotificationCategory::categoryWithIdentifier_actions_intentIdentifiers_options(
        &NSString::from_str(TURN_ACTIONS),
        &NSArray::from_retained_slice(&[undo]),
        &NSArray::new(),
        UNNotificationCategoryOptions::CustomDismissAction,
    );
    center.setNotificationCategories(&NSSet::from_retained_slice(&[category, turn]));
    let delegate = Delegate::new();
    center.setDelegate(Some(ProtocolObject::from_ref(&*delegate)));
    // The center keeps only a weak reference: keep the delegate for the app's lifetime.
    let _ = DELEGATE.set(Retained::into_raw(delegate) as usize);
    let granted = RcBlock::new(|granted: objc2::runtime::Bool, _error: *mut NSError| {
        if !granted.as_bool() {
            tracing::warn!(
                "notifications are not allowed for Souz; enable them in System Settings"
            );
        }
    });
    center.requestAuthorizationWithOptions_completionHandler(
        UNAuthorizationOptions::Alert | UNAuthorizationOptions::Sound,
        &granted,
    );
}

/// Posts a notification under `identifier` (see [`super::Subject::identifier`]); `category`
/// gives it buttons (approvals: Approve and Deny; a turn's changes: Undo), none leaves it a
/// click that opens the window.
pub fn post(
    identifier: &str,
    title: &str,
    body: &str,
    category: Option<&str>,
) -> Result<(), String> {
    let content = UNMutableNotificationContent::new();
    content.setTitle(&NSString::from_str(title));
    content.setBody(&NSString::from_str(body));
    if let Some(category) = category {
        content.setCategoryIdentifier(&NSString::from_str(category));
    }
    content.setUserInfo(&NSDictionary::new());
    let request = UNNotificationRequest::requestWithIdentifier_content_trigger(
        &NSString::from_str(identifier),
        &content,
        None,
    );
    let done = RcBlock::new(|error: *mut NSError| {
        if !error.is_null() {
            tracing::warn!("macOS refused a notification");
        }
    });
    UNUserNotificationCenter::currentNotificationCenter()
        .addNotificationRequest_withCompletionHandler(&request, Some(&done));
    Ok(())
}

/// Withdraws the notification posted under `identifier` (decided, answered or gone elsewhere).
pub fn remove(identifier: &str) {
    let identifiers = NSArray::from_retained_slice(&[NSString::from_str(identifier)]);
    let center = UNUserNotificationCenter::currentNotificationCenter();
    center.removeDeliveredNotificationsWithIdentifiers(&identifiers);
    center.removePendingNotificationRequestsWithIdentifiers(&identifiers);
}
