import { DocumentReference, GeoPoint, Timestamp } from "firebase-admin/firestore";

/**
 * A stable plain form of Firestore values, so the archive hash of a document is the same before and after
 * the copy round-trips through Firestore: Timestamps keep their nanoseconds, references their path, bytes
 * their content. Non-finite numbers get a tagged form because canonical JSON refuses them.
 */
export function toPlain(value: unknown): unknown {
  if (value === null || value === undefined) return null;
  if (typeof value === "number") return Number.isFinite(value) ? value : { $number: String(value) };
  if (typeof value !== "object") return value;
  if (value instanceof Timestamp) return { $timestamp: `${value.seconds}.${String(value.nanoseconds).padStart(9, "0")}` };
  if (value instanceof Date) return toPlain(Timestamp.fromDate(value));
  if (value instanceof GeoPoint) return { $geopoint: [value.latitude, value.longitude] };
  if (value instanceof DocumentReference) return { $ref: value.path };
  if (value instanceof Uint8Array) return { $bytes: Buffer.from(value).toString("base64") };
  if (Array.isArray(value)) return value.map(toPlain);
  return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, toPlain(v)]));
}
