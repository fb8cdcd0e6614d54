import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["node_modules/", "functions/lib/", "functions/src/generated/", ".emulators/", "artifacts/", "test/fixtures/", "console/dist/", "packages/client/dist/", "packages/kit/lib/", "packages/kit/console/", "scripts/*.d.mts", "**/*.js", "**/*.mjs", "**/*.cjs"] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: {
        project: ["./functions/tsconfig.json", "./tsconfig.json", "./console/tsconfig.json", "./packages/client/tsconfig.json"],
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-misused-promises": "error",
      "@typescript-eslint/await-thenable": "error",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/restrict-template-expressions": ["error", { allowNumber: true, allowBoolean: true }],
    },
  },
  // Layering (pure rules, wings through their index, no cycles) is checked by dependency-cruiser: .dependency-cruiser.cjs.

);
