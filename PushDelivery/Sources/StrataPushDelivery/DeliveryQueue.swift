import Strata

/// The delivery loop's bookkeeping, a value under one lock: the notifications waiting per
/// device (in id order), which devices may send, what is in flight, and the answered
/// notifications waiting for their acknowledgement commit.
///
/// Invariants (checked by `checkInvariants()` in the tests):
/// - a device's waiting notifications are in increasing id order, and above the ids it has in
///   flight when `maxInFlightPerDevice` is 1 (so each device's notifications go out in order);
/// - `inFlight` ≤ `maxInFlight`; a device's `inFlight` ≤ `maxInFlightPerDevice`;
/// - nothing new is sent while `inFlight + answered + committing` (sent and not yet committed,
///   with the unsent acknowledgements of a suspended device counted too) would exceed
///   `maxInFlight + acknowledgementBatchSize`: the duplicate window after a crash;
/// - a device is in the ready list at most once (`listed`), and is there whenever it has a
///   waiting notification, no backoff, and room in flight (lazily: entries that no longer
///   qualify are skipped when they come up);
/// - `watermark` is the highest id ever seen: the stream yields ids in increasing order, so a
///   lower or equal id (from a stream reopened after an overflow) is one this loop holds or
///   has finished already.
struct DeliveryQueue {
    /// One device's notifications.
    struct Device {
        /// Waiting notifications from `head` on, in id order.
        var waiting: [PushNotification] = []
        var head = 0
        /// Sent and unanswered.
        var inFlight = 0
        /// Waiting out a retry delay.
        var backingOff = false
        /// Consecutive failures (retries) since its last definitive answer.
        var failures = 0
        /// In the ready list.
        var listed = false

        var waitingCount: Int { waiting.count - head }
    }

    let maxInFlight: Int
    let maxInFlightPerDevice: Int
    let batchSize: Int

    private(set) var devices: [String: Device] = [:]
    private var ready: [String] = []
    private var readyHead = 0
    /// Sent and unanswered, all devices.
    private(set) var inFlight = 0
    /// Waiting to be sent (retries included), all devices.
    private(set) var queued = 0
    /// Answered definitively, waiting for their acknowledgement commit.
    private(set) var answered: [PushNotification] = []
    /// In the acknowledgement commit under way.
    private(set) var committing = 0
    /// The highest id seen.
    private(set) var watermark: UInt64?

    init(maxInFlight: Int, maxInFlightPerDevice: Int, batchSize: Int) {
        self.maxInFlight = maxInFlight
        self.maxInFlightPerDevice = maxInFlightPerDevice
        self.batchSize = batchSize
    }

    /// Whether one more notification may be sent now.
    var canSend: Bool {
        inFlight < maxInFlight && inFlight + answered.count + committing < maxInFlight + batchSize
    }

    /// Notes `id` as seen; false when it is not above every id seen before (a re-yield).
    mutating func see(_ id: UInt64) -> Bool {
        if let watermark, id <= watermark { return false }
        watermark = id
        return true
    }

    /// Queues a notification just seen (its id is the highest so far, so it goes last).
    mutating func enqueue(_ notification: PushNotification) {
        let id = notification.deviceID
        devices[id, default: Device()].waiting.append(notification)
        queued += 1
        list(id)
    }

    /// The next notification to send, now counted in flight; nil when none may go now.
    mutating func next() -> PushNotification? {
        guard canSend else { return nil }
        while readyHead < ready.count {
            let id = ready[readyHead]
            readyHead += 1
            if readyHead >= 1_024 && readyHead * 2 >= ready.count {
                ready.removeFirst(readyHead)
                readyHead = 0
            }
            let perDevice = maxInFlightPerDevice
            let taken: PushNotification? = withDevice(id) { d in
                d.listed = false
                guard d.waitingCount > 0, !d.backingOff, d.inFlight < perDevice else { return nil }
                let n = d.waiting[d.head]
                d.head += 1
                if d.head == d.waiting.count {
                    d.waiting.removeAll(keepingCapacity: d.waiting.count <= 64)
                    d.head = 0
                } else if d.head >= 64 && d.head * 2 >= d.waiting.count {
                    d.waiting.removeFirst(d.head)
                    d.head = 0
                }
                d.inFlight += 1
                return n
            }
            guard let taken else { forgetIfIdle(id); continue }
            inFlight += 1
            queued -= 1
            list(id)
            return taken
        }
        return nil
    }

    /// A definitive answer to `notification` (delivered, rejected, or its device suspended):
    /// it leaves the flight and waits for its acknowledgement commit, with `alsoAcknowledge`
    /// (notifications acknowledged unsent).
    mutating func settle(_ notification: PushNotification, alsoAcknowledge: [PushNotification] = []) {
        let id = notification.deviceID
        withDevice(id) { d in
            d.inFlight -= 1
            d.failures = 0
        }
        inFlight -= 1
        answered.append(notification)
        answered.append(contentsOf: alsoAcknowledge)
        list(id)
        forgetIfIdle(id)
    }

    /// A retry: `notification` leaves the flight, goes back to the front of its device's
    /// notifications, and the device backs off (until ``endBackoff(device:)``). Returns the
    /// device's consecutive failures, this one included.
    mutating func retry(_ notification: PushNotification) -> Int {
        inFlight -= 1
        queued += 1
        return withDevice(notification.deviceID) { d in
            d.inFlight -= 1
            d.backingOff = true
            d.failures += 1
            var index = d.head
            while index < d.waiting.count && d.waiting[index].id < notification.id { index += 1 }
            if index == d.head && d.head > 0 {
                d.head -= 1
                d.waiting[d.head] = notification
            } else {
                d.waiting.insert(notification, at: index)
            }
            return d.failures
        }
    }

    /// The device's retry delay has passed: it may send again.
    mutating func endBackoff(device id: String) {
        guard devices[id] != nil else { return }
        withDevice(id) { $0.backingOff = false }
        list(id)
        forgetIfIdle(id)
    }

    /// Takes the device's waiting notifications (not those in flight): its token was refused.
    mutating func dropWaiting(device id: String) -> [PushNotification] {
        guard devices[id] != nil else { return [] }
        let dropped: [PushNotification] = withDevice(id) { d in
            let taken = Array(d.waiting[d.head...])
            d.waiting = []
            d.head = 0
            return taken
        }
        queued -= dropped.count
        forgetIfIdle(id)
        return dropped
    }

    /// The next acknowledgement batch (at most `batchSize`), now counted as committing.
    mutating func takeBatch() -> [PushNotification] {
        guard committing == 0, !answered.isEmpty else { return [] }
        let batch: [PushNotification]
        if answered.count <= batchSize {
            batch = answered
            answered.removeAll(keepingCapacity: true)
        } else {
            batch = Array(answered.prefix(batchSize))
            answered.removeFirst(batchSize)
        }
        committing = batch.count
        return batch
    }

    /// The commit of the batch taken ended: committed, or failed (`restore`: the batch waits again).
    mutating func endCommit(restore batch: [PushNotification]? = nil) {
        committing = 0
        if let batch { answered.insert(contentsOf: batch, at: 0) }
    }

    /// Whether an acknowledgement batch is full.
    var batchIsFull: Bool { answered.count >= batchSize }

    private mutating func withDevice<R>(_ id: String, _ body: (inout Device) -> R) -> R {
        body(&devices[id, default: Device()])
    }

    /// Puts the device in the ready list if it may send and is not there.
    private mutating func list(_ id: String) {
        let perDevice = maxInFlightPerDevice
        let add: Bool = withDevice(id) { d in
            guard !d.listed, d.waitingCount > 0, !d.backingOff, d.inFlight < perDevice else { return false }
            d.listed = true
            return true
        }
        if add { ready.append(id) }
    }

    /// Drops a device that holds nothing (bounded memory over many devices).
    private mutating func forgetIfIdle(_ id: String) {
        guard let d = devices[id], d.waitingCount == 0, d.inFlight == 0, !d.backingOff, !d.listed else { return }
        devices[id] = nil
    }

    /// Checks the invariants (tests).
    func checkInvariants() -> [String] {
        var problems: [String] = []
        if inFlight > maxInFlight { problems.append("inFlight \(inFlight) > \(maxInFlight)") }
        var waiting = 0, flying = 0
        for (id, d) in devices {
            waiting += d.waitingCount
            flying += d.inFlight
            if d.inFlight > maxInFlightPerDevice { problems.append("\(id): inFlight \(d.inFlight)") }
            let ids = d.waiting[d.head...].map(\.id)
            if ids != ids.sorted() { problems.append("\(id): waiting out of order") }
            let shouldList = d.waitingCount > 0 && !d.backingOff && d.inFlight < maxInFlightPerDevice
            if shouldList && !d.listed { problems.append("\(id): may send but is not listed") }
            if d.listed != ready[readyHead...].contains(id) { problems.append("\(id): listed flag disagrees with the list") }
        }
        if waiting != queued { problems.append("queued \(queued) != \(waiting)") }
        if flying != inFlight { problems.append("inFlight \(inFlight) != \(flying)") }
        return problems
    }
}
