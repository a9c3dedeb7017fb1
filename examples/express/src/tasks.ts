import { defineTask } from "cairnq";

/** What the API submits: a source image and the width of the thumbnail to make. */
export interface ThumbnailPayload {
  url: string;
  width: number;
}

/** What the worker stores as the task's result, and `GET /tasks/:id` returns. */
export interface ThumbnailResult {
  source: {
    url: string;
    bytes: number;
    contentType: string | null;
    sha256: string;
    /** Pixel size read from the PNG header; `null` for other formats. */
    width: number | null;
    height: number | null;
  };
  thumbnail: {
    /** Where a real service would have uploaded the thumbnail (object storage key). */
    key: string;
    width: number;
    height: number | null;
  };
}

/** The queue thumbnail tasks wait in; the worker claims from it. */
export const THUMBNAILS_QUEUE = "thumbnails";

/**
 * The one task type of this example, shared by the API (which submits it) and
 * the worker (which handles it), so both agree on the name, the queue and the
 * payload and result types.
 */
export const thumbnail = defineTask<ThumbnailPayload, ThumbnailResult>("thumbnail", {
  queue: THUMBNAILS_QUEUE,
  maxAttempts: 3,
});
