//! What the bot says, in the person's interface language (the local person's
//! `interfaceLanguage`, which the gate follows: [`Channel::language`](super::Channel)): every
//! text the channel sends or shows on a button exists here in English and Russian.
//!
//! Invariant: the words are the channel's own; what comes from elsewhere (a tool's summary, a
//! schedule's name, the model's answer) is passed in and escaped by the caller like any text.

use souz_protocol::language::Language;
use souz_protocol::localized;

/// A fixed reply in both languages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Reply {
    /// In English.
    pub en: &'static str,
    /// In Russian.
    pub ru: &'static str,
}

impl Reply {
    /// The reply in `language`.
    pub(crate) fn text(self, language: Language) -> &'static str {
        match language {
            Language::En => self.en,
            Language::Ru => self.ru,
        }
    }
}

/// After a successful link.
pub(crate) const LINKED: Reply = Reply {
    en: "Linked: this Telegram account now talks to Souz. Write anything to start.",
    ru: "Готово: этот аккаунт Telegram теперь говорит с Souz. Напишите что-нибудь, чтобы начать.",
};
/// To a code that is not the waiting one.
pub(crate) const BAD_CODE: Reply = Reply {
    en: "That code is not valid or has expired. Run `souz telegram link` on your computer and \
         send the code it prints.",
    ru: "Этот код неверен или устарел. Выполните `souz telegram link` на компьютере и \
         пришлите код, который он покажет.",
};
/// To anyone but the linked account (once).
pub(crate) const REFUSED: Reply = Reply {
    en: "This bot serves someone else.",
    ru: "Этот бот работает для другого человека.",
};
/// To a message over the limit.
pub(crate) const TOO_LONG: Reply = Reply {
    en: "That message is too long (8000 characters at most).",
    ru: "Сообщение слишком длинное (не больше 8000 символов).",
};
/// To a message without text or a file.
pub(crate) const TEXT_ONLY: Reply = Reply {
    en: "Souz takes text, photos and documents.",
    ru: "Souz принимает текст, фотографии и документы.",
};
/// When the input could not be delivered (a reason may follow after a colon).
pub(crate) const NOT_DELIVERED: Reply = Reply {
    en: "Souz could not take that message",
    ru: "Souz не смог принять это сообщение",
};
/// When the input waits for the running turn.
pub(crate) const QUEUED: Reply = Reply {
    en: "Souz takes this up when the current task ends.",
    ru: "Souz займётся этим, когда закончит текущую задачу.",
};
/// A turn that ended without text.
pub(crate) const DONE: Reply = Reply {
    en: "Done.",
    ru: "Готово.",
};
/// A cancelled turn.
pub(crate) const CANCELLED: Reply = Reply {
    en: "The task was cancelled.",
    ru: "Задача отменена.",
};
/// The label of the Approve button.
pub(crate) const APPROVE: Reply = Reply {
    en: "Approve",
    ru: "Разрешить",
};
/// The label of the Deny button.
pub(crate) const DENY: Reply = Reply {
    en: "Deny",
    ru: "Запретить",
};

/// The answers to a button press.
pub(crate) mod press {
    use super::Reply;

    /// The press approved.
    pub(crate) const APPROVED: Reply = Reply {
        en: "Approved.",
        ru: "Разрешено.",
    };
    /// The press denied.
    pub(crate) const DENIED: Reply = Reply {
        en: "Denied.",
        ru: "Запрещено.",
    };
    /// A used, unknown or forged handle.
    pub(crate) const INVALID: Reply = Reply {
        en: "This button is no longer valid.",
        ru: "Эта кнопка больше не действует.",
    };
    /// A press of another account.
    pub(crate) const NOT_YOURS: Reply = Reply {
        en: "This button is not yours.",
        ru: "Эта кнопка не ваша.",
    };
    /// The approval was decided elsewhere first.
    pub(crate) const ALREADY_DECIDED: Reply = Reply {
        en: "Already decided in Souz; nothing changed.",
        ru: "Уже решено в Souz; ничего не изменилось.",
    };
    /// The approval expired before the press.
    pub(crate) const EXPIRED: Reply = Reply {
        en: "This approval expired; nothing changed.",
        ru: "Время на решение истекло; ничего не изменилось.",
    };
}

/// What an approval's message says once it is no longer pending (its buttons are gone).
pub(crate) mod outcome {
    use super::Reply;

    /// Approved from this chat's button.
    pub(crate) const APPROVED_HERE: Reply = Reply {
        en: "Approved.",
        ru: "Разрешено.",
    };
    /// Denied from this chat's button.
    pub(crate) const DENIED_HERE: Reply = Reply {
        en: "Denied.",
        ru: "Запрещено.",
    };
    /// Approved in Souz (the app, the web UI, the API, the CLI).
    pub(crate) const APPROVED: Reply = Reply {
        en: "Approved in Souz.",
        ru: "Разрешено в Souz.",
    };
    /// Denied in Souz.
    pub(crate) const DENIED: Reply = Reply {
        en: "Denied in Souz.",
        ru: "Запрещено в Souz.",
    };
    /// Nobody answered in time, or the request went away.
    pub(crate) const EXPIRED: Reply = Reply {
        en: "Expired.",
        ru: "Время истекло.",
    };
}

/// A failed turn, with Souz's reason.
pub(crate) fn failed(language: Language, reason: &str) -> String {
    localized!(
        language,
        "The task failed: {}",
        "Задача не выполнена: {}",
        reason
    )
}

/// The message asking for an approval: the tool and what it will do.
pub(crate) fn asks(language: Language, tool: &str, summary: &str) -> String {
    localized!(
        language,
        "Souz asks to run {}: {}",
        "Souz просит разрешения на {}: {}",
        tool,
        summary
    )
}

/// The message asking for an approval a scheduled run is parked on.
pub(crate) fn parked_asks(language: Language, schedule: &str, tool: &str, summary: &str) -> String {
    localized!(
        language,
        "The scheduled run '{}' waits for you. Souz asks to run {}: {}",
        "Запланированный запуск «{}» ждёт вашего решения. Souz просит разрешения на {}: {}",
        schedule,
        tool,
        summary
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reply_has_both_languages() {
        let all = [
            LINKED,
            BAD_CODE,
            REFUSED,
            TOO_LONG,
            TEXT_ONLY,
            NOT_DELIVERED,
            QUEUED,
            DONE,
            CANCELLED,
            APPROVE,
            DENY,
            press::APPROVED,
            press::DENIED,
            press::INVALID,
            press::NOT_YOURS,
            press::ALREADY_DECIDED,
            press::EXPIRED,
            outcome::APPROVED_HERE,
            outcome::DENIED_HERE,
            outcome::APPROVED,
            outcome::DENIED,
            outcome::EXPIRED,
        ];
        for reply in all {
            assert!(!reply.en.is_empty() && !reply.ru.is_empty());
            assert_ne!(reply.en, reply.ru, "{reply:?}");
            assert!(
                reply.ru.chars().any(|c| ('а'..='я').contains(&c)),
                "{reply:?}"
            );
        }
        assert!(asks(Language::Ru, "NewFile", "x").contains("Souz просит"));
    }
}
