/**
 * The codebase `retention init` writes into an app's project from a kit tarball: the folder
 * `firebase functions:kits:install --directory <folder>` installs, shaped as the one a `--package` install generates
 * under function-kits/<kit>/source (a package.json that depends on the kit and on the Firebase SDKs it was tested
 * with, an index that exports the kit), with the tarball beside it. Pure: the kit's manifest, shrinkwrap and tarball
 * facts in, file contents out.
 */

/** What `retention init` reads from a kit tarball: its package.json and npm-shrinkwrap.json. */
export interface KitManifest {
  name: string;
  version: string;
  license?: string;
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  bin?: Record<string, string>;
  engines?: Record<string, string>;
}

export interface Lockfile {
  name?: string;
  version?: string;
  lockfileVersion: number;
  requires?: boolean;
  packages: Record<string, Record<string, unknown>>;
}

export interface KitTarball {
  manifest: KitManifest;
  shrinkwrap: Lockfile;
  /** The tarball's file name, as it sits in the codebase folder, and its sha512 integrity (npm's SRI form). */
  file: string;
  integrity: string;
}

/** The Node.js major the functions run on (functions/package.json's engines). */
export const NODE_ENGINE = "22";

/** The codebase's dependencies: the kit from its tarball, and the SDKs it names (its peer, and firebase-admin) at its versions. */
export function codebaseDependencies(kit: KitTarball): Record<string, string> {
  const sdk = (name: string): Record<string, string> => {
    const v = kit.manifest.peerDependencies?.[name] ?? kit.manifest.dependencies?.[name];
    return v ? { [name]: v } : {};
  };
  return { [kit.manifest.name]: `file:${kit.file}`, ...sdk("firebase-admin"), ...sdk("firebase-functions") };
}

/** package.json: the kit and the SDKs; `main` the index, no build step (firebase-tools then adds no predeploy). */
export function codebasePackageJson(kit: KitTarball, name: string, previous?: Record<string, unknown>): string {
  const pkg = {
    ...previous,
    name,
    private: true,
    description: `The ${kit.manifest.name} function kit as firebase-tools installs it (functions:kits:install --directory). Written by \`retention init\`.`,
    main: "index.js",
    engines: { node: NODE_ENGINE },
    dependencies: { ...(previous?.dependencies as Record<string, string> | undefined), ...codebaseDependencies(kit) },
  };
  return `${JSON.stringify(pkg, null, 2)}\n`;
}

/**
 * package-lock.json: the kit's own shrinkwrap, hoisted at the codebase's root (where npm puts a dependency's
 * dependencies when nothing else is installed), plus the kit's entry from its tarball. The install is then the exact
 * set of packages the kit was tested with, and needs nothing the npm cache lacks.
 */
export function codebaseLockfile(kit: KitTarball, name: string, dependencies: Record<string, string>): string {
  const root = kit.shrinkwrap.packages[""] ?? {};
  const packages: Lockfile["packages"] = {
    "": { name, dependencies, engines: { node: NODE_ENGINE } },
    [`node_modules/${kit.manifest.name}`]: {
      version: kit.manifest.version,
      resolved: `file:${kit.file}`,
      integrity: kit.integrity,
      ...(kit.manifest.license ? { license: kit.manifest.license } : {}),
      ...(root.dependencies ? { dependencies: root.dependencies } : {}),
      ...(kit.manifest.bin ? { bin: kit.manifest.bin } : {}),
      ...(kit.manifest.engines ? { engines: kit.manifest.engines } : {}),
      ...(root.peerDependencies ? { peerDependencies: root.peerDependencies } : {}),
    },
  };
  for (const [path, entry] of Object.entries(kit.shrinkwrap.packages)) {
    if (path === "") continue;
    if (!path.startsWith("node_modules/")) throw new Error(`the kit's shrinkwrap has ${path}, outside node_modules/`);
    if (path === `node_modules/${kit.manifest.name}`) throw new Error(`the kit's shrinkwrap names the kit itself (${path})`);
    // The kit's peers are the codebase's own dependencies here: no longer reached through a peer edge only.
    const { peer: _peer, ...rest } = entry;
    packages[path] = rest;
  }
  return `${JSON.stringify({ name, lockfileVersion: 3, requires: true, packages }, null, 2)}\n`;
}

/** index.js: the codebase's entry, the team's to edit (as the index a `--package` install writes is). */
export function codebaseIndex(kit: KitManifest): string {
  return [
    `// The codebase firebase-tools installs as the ${kit.name} function kit (\`firebase functions:kits:install --directory\``,
    "// <this folder>); written once by `retention init`, and yours from then on. It exports every function of the kit,",
    "// which firebase-tools deploys as kit-<instance>-<name> for each instance in firebase.json. The functions enforce the",
    "// registry bundle RETENTION_REGISTRY_FILE names (`retention setup` writes it into this folder and names it in the",
    "// instance's config), relative to this folder.",
    `module.exports = require(${JSON.stringify(kit.name)});`,
    "",
  ].join("\n");
}

/** .gitignore: the installed packages, and the emulators' local files (the evidence key in .secret.local). */
export const CODEBASE_GITIGNORE = "node_modules/\n*.local\n";
