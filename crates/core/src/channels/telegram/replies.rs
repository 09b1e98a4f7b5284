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
/// The label of the button that approves with the approval's suggested scope (the prompt
/// says what that scope is).
pub(crate) const APPROVE_SUGGESTED: Reply = Reply {
    en: "Allow as suggested",
    ru: "Разрешить, как предложено",
};
/// To a message that is not an answer while a question waits for a choice.
pub(crate) const PICK_A_CHOICE: Reply = Reply {
    en: "Souz waits for your answer to its question: press one of the buttons under it.",
    ru: "Souz ждёт ответа на свой вопрос: нажмите одну из кнопок под ним.",
};
/// To a file sent while a question waits for its answer.
pub(crate) const ANSWER_FIRST: Reply = Reply {
    en: "Souz waits for your answer to its question: answer it first, then send the file.",
    ru: "Souz ждёт ответа на свой вопрос: сначала ответьте, затем пришлите файл.",
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
    /// The press answered a question.
    pub(crate) const ANSWERED: Reply = Reply {
        en: "Answered.",
        ru: "Ответ принят.",
    };
    /// The question was answered or withdrawn elsewhere first.
    pub(crate) const ALREADY_ANSWERED: Reply = Reply {
        en: "This question is no longer waiting; nothing changed.",
        ru: "Этот вопрос больше не ждёт ответа; ничего не изменилось.",
    };
    /// Souz could not act on the press (a failure inside it).
    pub(crate) const FAILED: Reply = Reply {
        en: "Souz could not do that now; try it in the app.",
        ru: "Souz не смог сделать это сейчас; попробуйте в приложении.",
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
    /// A choice of a multiple-choice question was picked or unpicked.
    pub(crate) const PICKED: Reply = Reply {
        en: "Noted. Press Done when you have picked all you want.",
        ru: "Отмечено. Когда выберете всё нужное, нажмите «Готово».",
    };
    /// Done was pressed before any choice was picked.
    pub(crate) const PICK_FIRST: Reply = Reply {
        en: "Pick at least one choice first, then press Done.",
        ru: "Сначала выберите хотя бы один вариант, затем нажмите «Готово».",
    };
}

/// The label of a multiple-choice question's Done button.
pub(crate) const DONE_BUTTON: Reply = Reply {
    en: "Done",
    ru: "Готово",
};

/// What a multiple-choice question's message adds under the question.
pub(crate) const PICK_SEVERAL: Reply = Reply {
    en: "(Pick one or more choices, then press Done.)",
    ru: "(Выберите один или несколько вариантов, затем нажмите «Готово».)",
};

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
    /// A question withdrawn: its turn ended before an answer came.
    pub(crate) const WITHDRAWN: Reply = Reply {
        en: "The question was withdrawn.",
        ru: "Вопрос снят.",
    };
}

/// The line under a prompt that names the suggested scope its third button gives.
pub(crate) fn suggested(language: Language, label: &str) -> String {
    localized!(
        language,
        "“Allow as suggested”: {}",
        "«Разрешить, как предложено»: {}",
        label
    )
}

/// The message asking a question of the agent's (its choices are the buttons).
pub(crate) fn question(language: Language, title: &str, free_text: bool) -> String {
    if !free_text {
        return localized!(language, "Souz asks: {}", "Souz спрашивает: {}", title);
    }
    localized!(
        language,
        "Souz asks: {}\n\n(Reply with a message to answer in your own words.)",
        "Souz спрашивает: {}\n\n(Чтобы ответить своими словами, напишите сообщение.)",
        title
    )
}

/// What a question's message says once it was answered: `here` from Telegram, else in Souz;
/// `answer` is what was chosen or said.
pub(crate) fn answered(language: Language, here: bool, answer: &str) -> String {
    if here {
        localized!(language, "Answered: {}", "Ответ: {}", answer)
    } else {
        localized!(
            language,
            "Answered in Souz: {}",
            "Ответ дан в Souz: {}",
            answer
        )
    }
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
            APPROVE_SUGGESTED,
            PICK_A_CHOICE,
            ANSWER_FIRST,
            DONE_BUTTON,
            PICK_SEVERAL,
            press::PICKED,
            press::PICK_FIRST,
            press::APPROVED,
            press::ANSWERED,
            press::ALREADY_ANSWERED,
            press::FAILED,
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
            outcome::WITHDRAWN,
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
