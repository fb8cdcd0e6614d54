/** Types of what scripts/demo-webhook.mjs exports, for the suite that checks the demo's erasure reaches it (test/integration/examples/atlasmart-seed.test.ts). */
export declare function localKey(root: string, secret: string): string;
export declare function signedBy(key: string, body: string, header: string | undefined): boolean;
export declare function startDemoWebhook(options: { root: string; processor: string; secret: string; port: number; log?: (line: string) => void }): Promise<{ url: string; stop: () => Promise<void> }>;
