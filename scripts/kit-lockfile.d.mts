/** Types of scripts/kit-lockfile.mjs, for the suites that use it. */
export interface LockfileEntry {
  version?: string;
  resolved?: string;
  integrity?: string;
  link?: boolean;
  dev?: boolean;
  optional?: boolean;
  peer?: boolean;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  [field: string]: unknown;
}
export interface Lockfile {
  name?: string;
  version?: string;
  lockfileVersion: number;
  requires?: boolean;
  packages: Record<string, LockfileEntry>;
}
export declare const REGISTRY: string;
export declare function registryTarball(path: string, version: string): string;
export declare function resolveFrom(packages: Lockfile["packages"], from: string, name: string): string | null;
export declare function subsetLockfile(
  rootLock: Lockfile,
  options: { from: string; root: { name: string; version: string; dependencies?: Record<string, string>; peerDependencies?: Record<string, string>; [field: string]: unknown } },
): Lockfile;
