// `strata-crash-helper replicate <directory> <database-url> <user> <password>`: publishes and
// appends under repeating replications until killed, for the kill -9 test of
// Tests/StrataTests/Replication/StreamFaultTests.swift.
//
// Opens the store (synchronous durability), starts repeating bidirectional replications of the
// channel `kill/room` and the series `kill/series` with the gateway database, waits until the
// series' claim is granted (an append stops being refused), then forever publishes `m<i>` and
// appends `Double(i)` (i = 0, 1, 2, …), printing `ACK <i>` after both returned, each line with
// one unbuffered write.

import Foundation
import Strata
#if canImport(Glibc)
import Glibc
#endif

func runReplicate(directory: URL, arguments: [String]) -> Never {
    let usage = "usage: strata-crash-helper replicate <directory> <database-url> <user> <password>"
    guard arguments.count == 3, let url = URL(string: arguments[0]) else { fail(usage) }
    let store: Store
    let room: Channel<String>
    let series: TimeSeries<Double>
    do {
        store = try Store.open(at: directory, options: StoreOptions(durability: .synchronous))
        room = try store.channel("kill/room", of: String.self)
        series = try store.timeSeries("kill/series", of: Double.self)
        var configuration = ReplicationConfiguration.repeatingBidirectionalReplication(with: url)
        configuration.authentication = .basic(user: arguments[1], password: arguments[2])
        configuration.maximumRetryDelay = .seconds(1)
        configuration.batchSize = 50
        _ = try room.startReplication(with: configuration)
        _ = try series.startReplication(with: configuration)
    } catch {
        fail("open failed: \(error)")
    }
    var i = 0
    while true {
        exitIfOrphaned()
        do {
            try room.publish("m\(i)")
            // The first append waits for the claim.
            var appended = false
            while !appended {
                do {
                    try series.append(Double(i))
                    appended = true
                } catch StrataError.conflict {
                    usleep(20_000)
                    exitIfOrphaned()
                }
            }
        } catch {
            fail("write \(i) failed: \(error)")
        }
        emit("ACK \(i)")
        i += 1
        usleep(2_000)
    }
}
