#!/usr/bin/env node
// A persistent agentry hook: one process answers every event, one JSON line each way.
//
// Blocks `rm -rf` in Bash calls and lets everything else through. Register it with
// {"type": "persistent", "command": "node guard.js"}.
const readline = require("node:readline");

readline.createInterface({ input: process.stdin }).on("line", (line) => {
  const { id, input: event } = JSON.parse(line);
  const answer = { id };
  const command = (event.tool_input && event.tool_input.command) || "";
  if (event.tool_name === "Bash" && command.includes("rm -rf")) {
    answer.block = "rm -rf is not allowed here";
  }
  process.stdout.write(JSON.stringify(answer) + "\n");
});
