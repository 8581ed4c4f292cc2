import Foundation

/// A one-line progress bar on stderr, drawn only when stderr is a terminal, at most ten times a
/// second.
final class ProgressBar {
    private let enabled: Bool
    private var label = ""
    private var lastDraw: UInt64 = 0

    init() {
        enabled = isatty(STDERR_FILENO) != 0
    }

    func start(_ label: String) {
        self.label = label
        lastDraw = 0
        update(done: 0, of: 1)
    }

    func update(done: Int, of total: Int, preparing: Bool = false) {
        guard enabled else { return }
        let now = Clock.nanoseconds()
        guard now &- lastDraw >= 100_000_000 || done >= total else { return }
        lastDraw = now
        let fraction = min(max(Double(done) / Double(max(total, 1)), 0), 1)
        let width = 30
        let filled = Int(fraction * Double(width))
        let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
        let phase = preparing ? "loading" : "timing "
        let line = "\r\(label.padding(toLength: 32, withPad: " ", startingAt: 0)) \(phase) [\(bar)] \(Int(fraction * 100))%"
        FileHandle.standardError.write(Data((line + "\u{1B}[K").utf8))
    }

    func finish() {
        guard enabled else { return }
        FileHandle.standardError.write(Data("\r\u{1B}[K".utf8))
    }
}
