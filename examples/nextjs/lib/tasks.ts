import { defineTask } from "cairnq";

/** What the page submits: the text to analyze. */
export interface AnalyzePayload {
  text: string;
}

/** What the worker stores as the result, and the page shows. */
export interface AnalyzeResult {
  words: number;
  sentences: number;
  /** The most frequent words of four letters or more, most frequent first. */
  topWords: { word: string; count: number }[];
  readingTimeSeconds: number;
}

/** The queue analyze tasks wait in; the worker claims from it. */
export const ANALYSIS_QUEUE = "analysis";

/**
 * The task type, shared by the route handler (which submits it) and the
 * worker (which handles it): one name, one queue, one pair of types.
 */
export const analyzeText = defineTask<AnalyzePayload, AnalyzeResult>("analyze-text", {
  queue: ANALYSIS_QUEUE,
  maxAttempts: 3,
});

/** The longest text the API accepts, in characters. */
export const MAX_TEXT_LENGTH = 20_000;
