// Builds the browser client into dist/: index.html + assets/app.js + assets/app.css.
// The server serves dist/index.html at / and /r/<code>, and the assets at /assets/…,
// so the page refers to them by absolute path (it works at any depth of the URL).
import { build, context } from "esbuild";
import { createHash } from "node:crypto";
import { mkdir, readFile, rm, writeFile, copyFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import path from "node:path";

const here = path.dirname(fileURLToPath(import.meta.url));
const dist = path.join(here, "dist");
const watch = process.argv.includes("--watch");

const options = {
  entryPoints: { app: path.join(here, "src/main.js") },
  bundle: true,
  format: "esm",
  target: ["es2020"],
  minify: !watch,
  sourcemap: true,
  outdir: path.join(dist, "assets"),
  logLevel: "warning",
};

async function writeIndex() {
  // A content hash in the query string lets browsers cache the assets safely.
  const js = await readFile(path.join(dist, "assets/app.js"));
  const css = await readFile(path.join(dist, "assets/app.css"));
  const version = createHash("sha256").update(js).update(css).digest("hex").slice(0, 10);
  const html = (await readFile(path.join(here, "src/index.html"), "utf8")).replaceAll(
    "__VERSION__",
    version,
  );
  await writeFile(path.join(dist, "index.html"), html);
  await copyFile(path.join(here, "src/favicon.svg"), path.join(dist, "assets/favicon.svg"));
}

await rm(dist, { recursive: true, force: true });
await mkdir(path.join(dist, "assets"), { recursive: true });
if (watch) {
  const ctx = await context({
    ...options,
    plugins: [{ name: "index", setup: (b) => b.onEnd(() => writeIndex()) }],
  });
  await ctx.watch();
  console.log("watching src/ …");
} else {
  await build(options);
  await writeIndex();
  console.log("built dist/index.html and dist/assets/");
}
