/// The kinds of files a store directory holds (FORMAT.md, "Store directory").
public enum StrataFileKind: String, Codable, Sendable, CaseIterable {
    /// `MANIFEST`: the live segments, their runs and the recovery counters.
    case manifest
    /// `NNNNNN.log`: a write-ahead log.
    case log
    /// `NNNNNN.seg`: a sorted segment file.
    case segment
    /// `LOCK`: held with `flock` by the process that has the store open.
    case lock
    /// `*.tmp`: a file being written (or left by a crash mid-write); recovery deletes it.
    case temporary
    /// Anything else; Strata leaves it alone.
    case other
}
