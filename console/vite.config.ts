import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

// The console is a static build served by Firebase Hosting (and its emulator in `npm start`). It imports the
// callable contract and the report's chart functions from functions/src (pure modules, one source).
export default defineConfig({
  plugins: [react()],
  build: { outDir: "dist", emptyOutDir: true, sourcemap: false, chunkSizeWarningLimit: 1500 },
  server: { fs: { allow: [".."] } },
});
