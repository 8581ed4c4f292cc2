/// Checks of the engine's invariants that only an invariants build compiles (Pebble's
/// `invariants` build tag): `STRATA_INVARIANTS=1 swift build` (or `Scripts/test`, which runs the
/// whole suite so) defines `STRATA_INVARIANTS` in every library target, and each
/// check sits in an `#if STRATA_INVARIANTS` block at its call site, so that other builds carry no
/// trace of it.
///
/// A violated invariant is a bug in Strata, never bad input (bad input throws a typed error in
/// every build): the check stops the process, naming what broke.
///
/// ```swift
/// #if STRATA_INVARIANTS
/// Invariants.require(ByteComparison.compare(lastKey, key) < 0, "keys out of order in \(path)")
/// #endif
/// ```
package enum Invariants {
    /// Whether this build checks invariants.
    #if STRATA_INVARIANTS
    package static let enabled = true
    #else
    package static let enabled = false
    #endif

    /// Stops the process with `message` when `condition` is false.
    package static func require(_ condition: Bool, _ message: @autoclosure () -> String,
                                file: StaticString = #fileID, line: UInt = #line) {
        if !condition { preconditionFailure("Strata invariant violated: \(message())", file: file, line: line) }
    }
}
