import type { NextConfig } from "next";

const nextConfig: NextConfig = {
  // Load these with Node's own `require` at run time instead of bundling
  // them: better-sqlite3 is a native addon (a .node file no bundler can
  // inline) and pg has optional native parts. CairnQ loads each driver only
  // when its store first opens, so only the one in use is ever loaded.
  serverExternalPackages: ["better-sqlite3", "pg"],
};

export default nextConfig;
