// pi-models.mjs: what pi 0.58.3's own ModelRegistry makes of models files,
// for the tests of Parse (TestParseAgainstPi). For each FILE it prints
//   error:   whether pi refused the file (it then keeps its built-in models)
//   changed: {"provider/id": contextWindow} for every model whose window
//            differs from the built-in one, or that is not built in
//   removed: built-in models pi no longer lists (there should be none)
// and under "(none)" the built-in models themselves (no models file).
//
// Run it from a folder where pi is installed (never inside the repository):
//   mkdir -p /work/scratch-pi && cd /work/scratch-pi
//   npm install @mariozechner/pi-coding-agent@0.58.3
//   node /path/to/pi-models.mjs FILE... > PI.json
import path from "node:path";
import { pathToFileURL } from "node:url";

const dist = path.join(process.cwd(), "node_modules/@mariozechner/pi-coding-agent/dist");
const { AuthStorage, ModelRegistry } = await import(pathToFileURL(path.join(dist, "index.js")));

const windows = (registry) => {
  const m = {};
  for (const x of registry.getAll()) m[`${x.provider}/${x.id}`] = x.contextWindow;
  return m;
};
const auth = AuthStorage.inMemory();
const builtin = windows(new ModelRegistry(auth, path.join(process.cwd(), "no-such-models.json")));
const out = { "(none)": { error: false, changed: builtin, removed: [] } };
for (const f of process.argv.slice(2)) {
  const r = new ModelRegistry(auth, path.resolve(f));
  const all = windows(r);
  const changed = {};
  for (const [k, w] of Object.entries(all)) if (builtin[k] !== w) changed[k] = w;
  const removed = Object.keys(builtin).filter((k) => !(k in all));
  out[path.basename(f)] = { error: r.getError() !== undefined, changed, removed };
}
console.log(JSON.stringify(out, null, 1));
