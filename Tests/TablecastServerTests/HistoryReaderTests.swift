import Foundation
import Logging
import MemoryBudget
import Synchronization
import TableStore
import TablecastProtocol
import WebSocketTransport
import XCTest

@testable import TablecastServer

final class HistoryReaderTests: XCTestCase {
    /// A request that reaches the readers after they stopped (a replay the router had handed to a task just before
    /// the server began to shut down) is refused at once with `unavailable`. Left in the queue, its task waited for
    /// good, and so did the server's shutdown, which waits for every task it started.
    func testARequestAfterTheReadersStoppedIsRefusedNotLeftWaiting() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("history-\(UUID()).db").path
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
        try SQLiteTableStore(path: path).close()
        let budget = MemoryBudget(limit: 1 << 30)
        let history = HistoryReader(
            database: path, limits: ProtocolLimits(), account: budget[.historyReplies],
            snapshotAccount: budget[.snapshots],
            failures: FailureLog(logger: Logger(label: "test"), tasks: ServerTasks()))
        await history.stop()
        let reply = Mutex<String?>(nil)
        let answered = expectation(description: "the request is answered")
        Task {
            let message = await history.changes(
                "t", from: nil, to: nil, limit: nil, newestFirst: false, ref: "late",
                for: WebSocketConnectionID(rawValue: 1), principal: "")
            reply.withLock { $0 = message.withUnsafeBytes { String(decoding: $0, as: UTF8.self) } }
            answered.fulfill()
        }
        await fulfillment(of: [answered], timeout: 5)
        let text = try XCTUnwrap(reply.withLock { $0 })
        XCTAssertTrue(text.contains(#""code":"unavailable""#) && text.contains("shutting down"), text)
        XCTAssertTrue(text.contains(#""ref":"late""#), text)
    }
}
