/**
 * The social example's demo data, with fixed ids the README, the rules suite and the integration suite rely
 * on. Business fields only: the governed write path adds the retention fields (examples/social/seed.ts).
 *
 * Who is where:
 * - u-ana follows u-bo and u-cy; u-bo follows u-ana; u-cy follows u-bo.
 * - p-ana-1 is Ana's post, commented on by Bo, Cy and Ana herself; p-bo-1 is Bo's, commented on by Ana and Cy;
 *   p-cy-1 is Cy's, without comments.
 * - ch-ana-bo (Ana, Bo) and ch-trio (Ana, Bo, Cy) are chats Ana is in; ch-bo-cy (Bo, Cy) is one she is not in.
 * - n-ana-1 and n-ana-2 are notifications for Ana, n-bo-1 one for Bo (registry v2: kept 30 days, by TTL).
 */
export interface SocialDoc {
  path: string;
  data: Record<string, unknown>;
}

export const SOCIAL_DOCS: readonly SocialDoc[] = [
  { path: "users/u-ana", data: { displayName: "Ana Lima", bio: "Climbs, cooks, reads." } },
  { path: "users/u-ana/following/u-bo", data: { followeeId: "u-bo" } },
  { path: "users/u-ana/following/u-cy", data: { followeeId: "u-cy" } },
  { path: "users/u-bo", data: { displayName: "Bo Berg", bio: "Photographs bridges." } },
  { path: "users/u-bo/following/u-ana", data: { followeeId: "u-ana" } },
  { path: "users/u-cy", data: { displayName: "Cy Okoro", bio: "Plays the double bass." } },
  { path: "users/u-cy/following/u-bo", data: { followeeId: "u-bo" } },

  { path: "posts/p-ana-1", data: { authorId: "u-ana", text: "First ascent of the season!" } },
  { path: "posts/p-ana-1/comments/c-bo-1", data: { authorId: "u-bo", text: "Congratulations!" } },
  { path: "posts/p-ana-1/comments/c-cy-1", data: { authorId: "u-cy", text: "Which route?" } },
  { path: "posts/p-ana-1/comments/c-ana-1", data: { authorId: "u-ana", text: "The north ridge." } },
  { path: "posts/p-bo-1", data: { authorId: "u-bo", text: "Fog over the old bridge." } },
  { path: "posts/p-bo-1/comments/c-ana-2", data: { authorId: "u-ana", text: "Beautiful light." } },
  { path: "posts/p-bo-1/comments/c-cy-2", data: { authorId: "u-cy", text: "Print it!" } },
  { path: "posts/p-cy-1", data: { authorId: "u-cy", text: "Rehearsal tonight." } },

  { path: "chats/ch-ana-bo", data: { title: "Ana & Bo", memberIds: ["u-ana", "u-bo"] } },
  { path: "chats/ch-ana-bo/messages/m-01", data: { senderId: "u-ana", text: "Coffee tomorrow?" } },
  { path: "chats/ch-ana-bo/messages/m-02", data: { senderId: "u-bo", text: "Sure, at nine." } },
  { path: "chats/ch-trio", data: { title: "Weekend trip", memberIds: ["u-ana", "u-bo", "u-cy"] } },
  { path: "chats/ch-trio/messages/m-03", data: { senderId: "u-cy", text: "Who drives?" } },
  { path: "chats/ch-trio/messages/m-04", data: { senderId: "u-ana", text: "I can." } },
  { path: "chats/ch-trio/messages/m-05", data: { senderId: "u-bo", text: "I'll bring the map." } },
  { path: "chats/ch-bo-cy", data: { title: "Bo & Cy", memberIds: ["u-bo", "u-cy"] } },
  { path: "chats/ch-bo-cy/messages/m-06", data: { senderId: "u-bo", text: "Gig on Friday?" } },

  { path: "notifications/n-ana-1", data: { recipientId: "u-ana", kind: "COMMENT", text: "Bo commented on your post." } },
  { path: "notifications/n-ana-2", data: { recipientId: "u-ana", kind: "FOLLOW", text: "Bo followed you." } },
  { path: "notifications/n-bo-1", data: { recipientId: "u-bo", kind: "COMMENT", text: "Ana commented on your post." } },
];

/**
 * The activity log, in the example's second governed database (`analytics`, registry v4): one event per thing a
 * member did, by uid. Ana's three go with her erasure; Bo's and Cy's stay.
 */
export const SOCIAL_ANALYTICS_DOCS: readonly SocialDoc[] = [
  { path: "events/ev-ana-1", data: { uid: "u-ana", kind: "signed-in" } },
  { path: "events/ev-ana-2", data: { uid: "u-ana", kind: "posted", postId: "p-ana-1" } },
  { path: "events/ev-ana-3", data: { uid: "u-ana", kind: "commented", postId: "p-bo-1" } },
  { path: "events/ev-bo-1", data: { uid: "u-bo", kind: "signed-in" } },
  { path: "events/ev-bo-2", data: { uid: "u-bo", kind: "commented", postId: "p-ana-1" } },
  { path: "events/ev-cy-1", data: { uid: "u-cy", kind: "posted", postId: "p-cy-1" } },
];

/** A Cloud Storage object of the demo, in the project's default bucket: a user's avatar or one of their uploads. */
export interface SocialObject {
  name: string;
  contentType: string;
  body: string;
}

/**
 * The demo's objects (the registry's `media` entry: `users/{uid}/` in the default bucket, held with `users/{uid}`).
 * Ana has an avatar and two uploads, Bo an avatar and an upload, Cy an avatar. The bytes are short text standing in
 * for an image or a file: the engine never looks inside an object.
 */
export const SOCIAL_OBJECTS: readonly SocialObject[] = [
  { name: "users/u-ana/avatar.jpg", contentType: "image/jpeg", body: "ana's avatar" },
  { name: "users/u-ana/uploads/2026/north-ridge.jpg", contentType: "image/jpeg", body: "the north ridge, first ascent of the season" },
  { name: "users/u-ana/uploads/route-notes.txt", contentType: "text/plain", body: "north ridge: 5 pitches, descent by the east gully" },
  { name: "users/u-bo/avatar.jpg", contentType: "image/jpeg", body: "bo's avatar" },
  { name: "users/u-bo/uploads/old-bridge.jpg", contentType: "image/jpeg", body: "fog over the old bridge" },
  { name: "users/u-cy/avatar.jpg", contentType: "image/jpeg", body: "cy's avatar" },
];

export interface SocialUser {
  uid: string;
  email: string;
  displayName: string;
  /** Staff carry roles; members of the app carry no claims (the app has no tenant). */
  claims: { roles?: string[] };
}

/** Auth-emulator users: three members and two compliance officers (a two-person hold release needs two). */
export const SOCIAL_USERS: readonly SocialUser[] = [
  { uid: "u-ana", email: "ana@social.test", displayName: "Ana Lima", claims: {} },
  { uid: "u-bo", email: "bo@social.test", displayName: "Bo Berg", claims: {} },
  { uid: "u-cy", email: "cy@social.test", displayName: "Cy Okoro", claims: {} },
  { uid: "s-dana", email: "dana.compliance@social.test", displayName: "Dana (compliance)", claims: { roles: ["compliance"] } },
  { uid: "s-eli", email: "eli.compliance@social.test", displayName: "Eli (compliance)", claims: { roles: ["compliance"] } },
];

export const SOCIAL_PASSWORD = "social-demo";

/** Collection ids the demo data uses, in either database (the registry check's "every collection is classified"). */
export function socialCollectionIds(): Set<string> {
  const ids = new Set<string>();
  for (const d of [...SOCIAL_DOCS, ...SOCIAL_ANALYTICS_DOCS]) {
    const parts = d.path.split("/");
    for (let i = 0; i < parts.length; i += 2) ids.add(parts[i]!);
  }
  return ids;
}
