import { FieldPath, type Query, type QueryDocumentSnapshot } from "firebase-admin/firestore";

/**
 * Documents per stream segment. One RunQuery stream serves a segment, so no single stream lives long enough
 * to meet its deadline on a large collection, and the next segment starts after the last document seen.
 */
export const SEGMENT = 20_000;

/**
 * A query's documents in document-id order, handed out in chunks of `chunkSize`. Each segment is one
 * streamed query: a stream reads about three times faster than paged `get()`s on the emulator, and while a
 * chunk is being processed the loop stops pulling, so the stream pauses (backpressure) and memory stays at
 * one chunk plus the stream's small buffer.
 */
export async function* pages(query: Query, chunkSize: number, segmentSize: number = SEGMENT): AsyncGenerator<QueryDocumentSnapshot[]> {
  const base = query.orderBy(FieldPath.documentId());
  let last: QueryDocumentSnapshot | undefined;
  for (;;) {
    const segment = (last ? base.startAfter(last) : base).limit(segmentSize);
    let seen = 0;
    let chunk: QueryDocumentSnapshot[] = [];
    for await (const snap of segment.stream() as AsyncIterable<QueryDocumentSnapshot>) {
      chunk.push(snap);
      seen++;
      last = snap;
      if (chunk.length >= chunkSize) {
        yield chunk;
        chunk = [];
      }
    }
    if (chunk.length > 0) yield chunk;
    if (seen < segmentSize) return;
  }
}
