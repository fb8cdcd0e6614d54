// The function kit's npm-shrinkwrap.json, taken from this repository's package-lock.json: the packages the kit's
// dependencies (and its firebase-functions peer) resolve to in the tree the tests ran on, at the same versions. A
// kit published with it installs the dependencies it was tested with (firebase-tools warns about a kit without
// one), and an install from it needs nothing the npm cache of `npm ci` lacks, which is how the kit tests run offline.
//
// Pure: a lockfile object in, a lockfile object out (scripts/build-kit.mjs reads and writes the files).

/**
 * Where npm resolves `name` from the package at `from` (a lockfile path, "" for the root): `from/node_modules/name`,
 * then the same in each ancestor. Returns the lockfile path of the package, or null.
 */
export function resolveFrom(packages, from, name) {
  let base = from;
  for (;;) {
    const candidate = `${base ? `${base}/` : ""}node_modules/${name}`;
    const entry = packages[candidate];
    if (entry) return entry.link ? entry.resolved : candidate;
    if (!base) return null;
    const i = base.lastIndexOf("/node_modules/");
    base = i < 0 ? "" : base.slice(0, i);
  }
}

/** The npm registry, whose tarball URLs the kit's lockfile names (npm swaps in a configured mirror's host on install). */
export const REGISTRY = "https://registry.npmjs.org";

/**
 * Where the registry serves a package's tarball: `<registry>/<name>/-/<basename>-<version>.tgz`. This repository's
 * lockfile leaves these out (omit-lockfile-registry-resolved), which makes npm fetch each package's metadata to find
 * them; a lockfile that names them lets npm take each tarball from its cache by integrity, offline.
 */
export function registryTarball(path, version) {
  const name = path.slice(path.lastIndexOf("node_modules/") + "node_modules/".length);
  return `${REGISTRY}/${name}/-/${name.split("/").pop()}-${version}.tgz`;
}

/**
 * The lockfile of a package whose dependencies are `root.dependencies` (and peers `root.peerDependencies`), as they
 * resolve from `from` (the lockfile path of the workspace whose dependencies the package shares, e.g. "functions") in
 * `rootLock`. Every package reached is kept at its own path, rebased so that `from`'s own node_modules becomes the new
 * root's: what resolved to a path before resolves to the same package after, since packages are only left out, never
 * moved past one another. A rebased path that collides with another kept one is refused. Flags are recomputed for the
 * new root: `optional` when reached only through optional edges, `peer` when only through peer edges; `dev` never.
 */
export function subsetLockfile(rootLock, { from, root }) {
  const packages = rootLock.packages;
  const wanted = [
    ...Object.keys(root.dependencies ?? {}).map((name) => ({ name, kind: "prod" })),
    ...Object.keys(root.peerDependencies ?? {}).map((name) => ({ name, kind: "peer" })),
  ];
  /** path -> { nonOptional, nonPeer }: whether some path from the root reaches it without an optional / peer edge. */
  const reach = new Map();
  const queue = [];
  const visit = (fromPath, name, nonOptional, nonPeer, optionalEdge) => {
    const path = resolveFrom(packages, fromPath, name);
    if (path === null) {
      if (optionalEdge) return;
      throw new Error(`${name} (needed by ${fromPath || "the root"}) is not in the lockfile: run npm install first`);
    }
    const seen = reach.get(path);
    const next = { nonOptional: nonOptional || (seen?.nonOptional ?? false), nonPeer: nonPeer || (seen?.nonPeer ?? false) };
    if (seen && seen.nonOptional === next.nonOptional && seen.nonPeer === next.nonPeer) return;
    reach.set(path, next);
    queue.push(path);
  };
  for (const { name, kind } of wanted) visit(from, name, true, kind !== "peer", false);
  while (queue.length > 0) {
    const path = queue.shift();
    const entry = packages[path];
    const { nonOptional, nonPeer } = reach.get(path);
    for (const name of Object.keys(entry.dependencies ?? {})) visit(path, name, nonOptional, nonPeer, false);
    for (const name of Object.keys(entry.optionalDependencies ?? {})) visit(path, name, false, nonPeer, true);
    for (const name of Object.keys(entry.peerDependencies ?? {})) {
      const optional = entry.peerDependenciesMeta?.[name]?.optional === true;
      visit(path, name, nonOptional && !optional, false, optional);
    }
  }
  const rebase = (path) => (from && path.startsWith(`${from}/`) ? path.slice(from.length + 1) : path);
  const out = { "": root };
  for (const path of [...reach.keys()].sort()) {
    const target = rebase(path);
    if (target in out) throw new Error(`${path} and another package both land at ${target} in the kit's tree`);
    const { dev: _dev, devOptional: _devOptional, optional: _optional, peer: _peer, ...entry } = packages[path];
    const { nonOptional, nonPeer } = reach.get(path);
    const resolved = entry.resolved ?? (entry.integrity && entry.version ? registryTarball(path, entry.version) : undefined);
    out[target] = { version: entry.version, ...(resolved ? { resolved } : {}), ...entry, ...(nonOptional ? {} : { optional: true }), ...(nonPeer ? {} : { peer: true }) };
  }
  const sorted = Object.fromEntries(Object.entries(out).sort(([a], [b]) => (a === "" ? -1 : b === "" ? 1 : a < b ? -1 : a > b ? 1 : 0)));
  return { name: root.name, version: root.version, lockfileVersion: 3, requires: true, packages: sorted };
}
