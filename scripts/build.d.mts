// Types of build.mjs for the TypeScript that imports it (tests, bench).
export declare const DIST: string;
export declare function stale(): boolean;
export declare function build(): Promise<void>;
