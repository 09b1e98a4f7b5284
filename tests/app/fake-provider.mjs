// The model for the app's end-to-end test: the fake OpenAI server of the browser test
// (tests/ui/fake-openai.mjs), scripted to ask the person a question with AskUser and then to
// answer; then, for the undo checks, a turn that edits ~/notes.txt and creates ~/made.txt, and
// a turn that creates ~/draft.txt. Writes its URL to the first argument's file and, as they come, the requests it got
// to the second's, so the test can see that the answer reached the model.

import { writeFileSync } from "node:fs";
import { startFakeOpenAi, text, toolCall } from "../ui/fake-openai.mjs";

const [urlFile, requestsFile] = process.argv.slice(2);
const provider = await startFakeOpenAi();
provider.push(toolCall("ask-1", "AskUser", { question: "Which color should the logo be?", choices: ["Red", "Blue"] }));
provider.push(text(["Blue it is."]));
const home = process.env.HOME;
provider.push(toolCall("edit-1", "RunSkillCommand", { skillId: "EditFile", arguments: { path: `${home}/notes.txt`, oldString: "tea", newString: "coffee" } }));
provider.push(toolCall("write-1", "RunSkillCommand", { skillId: "NewFile", arguments: { path: `${home}/made.txt`, text: "made by Souz\n" } }));
provider.push(text(["Edited the notes."]));
provider.push(toolCall("write-2", "RunSkillCommand", { skillId: "NewFile", arguments: { path: `${home}/draft.txt`, text: "a draft\n" } }));
provider.push(text(["Drafted."]));
let written = 0;
setInterval(() => {
  if (provider.requests.length !== written) {
    written = provider.requests.length;
    writeFileSync(requestsFile, JSON.stringify(provider.requests));
  }
}, 100);
writeFileSync(urlFile, provider.url);
process.on("SIGTERM", () => provider.close().then(() => process.exit(0)));
