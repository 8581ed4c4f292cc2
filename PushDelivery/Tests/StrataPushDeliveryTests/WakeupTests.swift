import Testing
@testable import StrataPushDelivery

@Suite struct WakeupTests {
    @Test("a signal given before the wait is kept; many signals make one wake-up")
    func early() async {
        let wakeup = Wakeup()
        wakeup.signal()
        wakeup.signal()
        await wakeup.wait()   // returns at once
        let task = Task { await wakeup.wait(); return true }
        try? await Task.sleep(for: .milliseconds(20))
        wakeup.signal()
        #expect(await task.value)
    }

    @Test("cancelling the waiter wakes it")
    func cancel() async {
        let wakeup = Wakeup()
        let task = Task { await wakeup.wait(); return Task.isCancelled }
        try? await Task.sleep(for: .milliseconds(20))
        task.cancel()
        #expect(await task.value)
    }
}
