// pi-end.mjs: what pi 0.58.3 itself makes of a transcript at the end of a run,
// for the tests of ReadEnd (TestEndAgainstPi). For each FILE it prints
//   tokens: getContextUsage().tokens (null after a compaction until a fresh usage)
//   model:  buildSessionContext().model as "provider/modelId" (null when none)
//   last:   the branch's last entry that puts a message into the context:
//           {entry, role, stopReason, calls}, null when there is none
// all computed by pi's own SessionManager and compaction code.
//
// Run it from a folder where pi is installed (never inside the repository):
//   mkdir -p /work/scratch-pi && cd /work/scratch-pi
//   npm install @mariozechner/pi-coding-agent@0.58.3
//   node /path/to/pi-end.mjs FILE... > PI.json
// It reads a temporary copy of each file: SessionManager.open may rewrite
// the file it opens (migration, or a file it starts over).
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";

const dist = path.join(process.cwd(), "node_modules/@mariozechner/pi-coding-agent/dist");
const { SessionManager } = await import(pathToFileURL(path.join(dist, "index.js")));
const { estimateContextTokens, calculateContextTokens } = await import(pathToFileURL(path.join(dist, "core/compaction/compaction.js")));

function unknownAfterCompaction(branch) {
  let c = -1;
  for (let i = 0; i < branch.length; i++) if (branch[i].type === "compaction") c = i;
  if (c < 0) return false;
  for (let i = branch.length - 1; i > c; i--) {
    const e = branch[i];
    if (e.type !== "message" || e.message.role !== "assistant") continue;
    if (e.message.stopReason === "error" || e.message.stopReason === "aborted") continue;
    return !(calculateContextTokens(e.message.usage) > 0);
  }
  return true;
}

function lastMessage(branch) {
  for (let i = branch.length - 1; i >= 0; i--) {
    const e = branch[i];
    if (e.type === "message") {
      const m = e.message;
      const calls = Array.isArray(m.content) ? m.content.filter((b) => b && b.type === "toolCall").length : 0;
      return { entry: e.id, role: m.role ?? null, stopReason: m.stopReason ?? null, calls };
    }
    if (e.type === "custom_message") return { entry: e.id, role: "custom", stopReason: null, calls: 0 };
    if (e.type === "branch_summary" && e.summary) return { entry: e.id, role: "branchSummary", stopReason: null, calls: 0 };
  }
  return null;
}

const out = {};
for (const f of process.argv.slice(2)) {
  const tmp = path.join(os.tmpdir(), `pi-end-${process.pid}-${path.basename(f)}`);
  fs.copyFileSync(f, tmp);
  try {
    const sm = SessionManager.open(tmp);
    const branch = sm.getBranch();
    const ctx = sm.buildSessionContext();
    const tokens = unknownAfterCompaction(branch) ? null : estimateContextTokens(ctx.messages).tokens;
    const model = ctx.model ? `${ctx.model.provider}/${ctx.model.modelId}` : null;
    out[path.basename(f)] = { tokens, model, last: lastMessage(branch) };
  } catch (e) {
    out[path.basename(f)] = { error: String(e) };
  } finally {
    fs.rmSync(tmp, { force: true });
  }
}
console.log(JSON.stringify(out, null, 1));
