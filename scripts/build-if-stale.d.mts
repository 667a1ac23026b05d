/** The file whose time is the last build's. */
export declare const BUILD_MARK: string;
/** Whether `root`'s build is missing or older than one of its sources. */
export declare function buildIsStale(root: string): boolean;
