/** Types of what scripts/storage-emulator.mjs exports, for the suites that start it themselves (test/helpers/kit.ts). */
export declare function startStorageEmulator(options: { host?: string; port?: number; projectId: string }): Promise<{ host: string; port: number; stop: () => Promise<void> }>;
