// `strata-crash-helper backup <directory> <target-root>`: backs the store up again and again while
// a writer appends, until killed, for Tests/StrataTests/Engine/BackupTests.swift.
//
// Opens the store (synchronous durability, a small memtable so that flushes and compactions
// happen during the backups). A writer thread puts `k/<i:08>` = `v<i>` for i = 0, 1, 2, …, one
// batch each, printing `ACK <i>` after each put returns. Once 500 puts are acknowledged, the main
// thread backs the store up into `<target-root>/<n>` for n = 0, 1, 2, …: before each backup it
// prints `START <n> <a>`, where a is the number of puts acknowledged at that moment (the backup must
// hold `k/0` … `k/<a-1>`), and `DONE <n>` after it returns. Each line is one unbuffered write.

import Foundation
import Strata
import Synchronization

func runBackup(directory: URL, arguments: [String]) -> Never {
    guard arguments.count == 1 else { fail("usage: strata-crash-helper backup <directory> <target-root>") }
    let root = URL(fileURLWithPath: arguments[0], isDirectory: true)
    let options = smallStoreOptions(durability: .synchronous)
    let store: Store
    do {
        store = try Store.open(at: directory, options: options)
    } catch {
        fail("open failed: \(error)")
    }
    let acknowledged = Atomic<Int>(0)
    let writer = Thread {
        var i = 0
        while true {
            exitIfOrphaned()
            do {
                try store.put(Array("k/\(padded(i, 8))".utf8), Array("v\(i)".utf8))
            } catch {
                fail("put \(i) failed: \(error)")
            }
            acknowledged.store(i + 1, ordering: .releasing)
            emit("ACK \(i)")
            i += 1
        }
    }
    writer.start()
    while acknowledged.load(ordering: .acquiring) < 500 { usleep(1_000) }
    var n = 0
    while true {
        exitIfOrphaned()
        emit("START \(n) \(acknowledged.load(ordering: .acquiring))")
        do {
            try store.backup(to: root.appendingPathComponent(String(n), isDirectory: true))
        } catch {
            fail("backup \(n) failed: \(error)")
        }
        emit("DONE \(n)")
        n += 1
    }
}
