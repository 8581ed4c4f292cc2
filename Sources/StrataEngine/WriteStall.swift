import Dispatch
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles

/// A commit leader waiting in `makeRoomForWrite` before its batch may go to the log: the
/// memtables are full and flushes behind, or there are too many sorted runs and compaction
/// behind. Every writer queued behind the leader waits with it, so a stall counts once.
package struct WriteStall {
    package enum Reason: String {
        case memtables = "memtables waiting for a flush"
        case sortedRuns = "sorted runs waiting for compaction"
    }

    /// Why the stall began, and when (`DispatchTime.uptimeNanoseconds`); nil while not stalled.
    fileprivate var began: (reason: Reason, at: UInt64)?

    package init(began: (reason: Reason, at: UInt64)? = nil) {
        self.began = began
    }
}

extension Engine {
    /// Called by the commit leader with the lock held, before each wait for room: the first wait
    /// begins the stall.
    package func beginStall(_ stall: inout WriteStall, _ reason: WriteStall.Reason) {
        guard stall.began == nil else { return }
        stall.began = (reason, DispatchTime.now().uptimeNanoseconds)
        writeStalls += 1
        diagnostics(.debug, "Writes stalled", [
            "stall.reason": "\(reason.rawValue)", "memtables.waiting": "\(immutables.count)",
            "runs": "\(version.runs.count)",
        ])
    }

    /// Called with the lock held when the leader stops waiting, with room or with an error:
    /// counts the stall's time for ``statistics`` and tells the log.
    package func endStall(_ stall: WriteStall) {
        guard let (reason, start) = stall.began else { return }
        let nanoseconds = DispatchTime.now().uptimeNanoseconds &- start
        writeStallNanoseconds += nanoseconds
        diagnostics(.info, "Write stall over", [
            "stall.reason": "\(reason.rawValue)", "stall.ms": "\(Double(nanoseconds / 1000) / 1000)",
        ])
    }
}
