/** Types of what scripts/emulators.mjs exports (run as a script, it is the emulator harness). */
export declare function resolveFirestoreJar(env?: Record<string, string | undefined>): string;
