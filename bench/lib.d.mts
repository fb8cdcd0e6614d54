/** Types of the bench's shared helpers that the tests use (bench/lib.mjs). */
export declare const counts: { reads: number; writes: number; deletes: number; rpcs: number };
export declare const rpcsByMethod: Map<string, number>;
export declare function resetCounts(): void;
export declare function countOperations(): void;
