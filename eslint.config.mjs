import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["node_modules/", "functions/lib/", "functions/src/generated/", ".emulators/", "artifacts/", "console/dist/", "packages/client/dist/", "**/*.js", "**/*.mjs", "**/*.cjs"] },
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
  {
    files: ["functions/src/domain/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            { group: ["firebase-admin", "firebase-admin/*", "firebase-functions", "firebase-functions/*", "@google-cloud/*"], message: "The domain layer takes data and a clock; no Firebase imports." },
            { group: ["../infra/*", "../entrypoints/*", "../config/*"], message: "The domain layer does not depend on outer layers." },
          ],
        },
      ],
    },
  },
);
