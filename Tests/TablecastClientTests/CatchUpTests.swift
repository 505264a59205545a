import TableModel
import TablecastClient
import TablecastProtocol
import XCTest

/// Catch-ups of big tables against a real server: what is built once and shared.
final class CatchUpTests: XCTestCase {
    /// Fills section 0 of `table` with `rows` rows of `bytes`-byte strings, a thousand per batch.
    static func fill(_ client: TablecastClient, _ table: String, rows: Int, bytes: Int) async throws {
        let value = JSONValue.string(String(repeating: "x", count: bytes))
        var inserted = 0
        while inserted < rows {
            let count = min(1000, rows - inserted)
            let inserts = (0..<count).map {
                ClientBatch.RowInsert(at: RowPath(section: 0, row: inserted + $0), row: RowContent(value: value))
            }
            try await client.batch(table, ClientBatch(insertRows: inserts), base: .current)
            inserted += count
        }
    }

    func testABigSnapshotIsEncodedOnceAndSharedByLaterJoinersWithTheUpdatesAfterIt() async throws {
        let server = try await TestServer()
        let admin = try TablecastClient(configuration: .init(url: server.url))
        admin.connect()
        try await admin.createTable("big", sections: [SectionContent()])
        try await Self.fill(admin, "big", rows: 10_000, bytes: 100) // a snapshot of ~1.2 MB
        let transport = try TablecastTransport()
        let subscribers = try (0..<40).map { _ in
            try TablecastClient(configuration: .init(url: server.url), transport: transport)
        }
        for subscriber in subscribers { subscriber.connect() }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for subscriber in subscribers { group.addTask { try await subscriber.subscribe("big") } }
            try await group.waitForAll()
        }
        XCTAssertEqual(
            subscribers.map { $0.replica(of: "big")?.table.sections[0].rows.count }, Array(repeating: 10_000, count: 40)
        )
        let afterJoins = try await server.metric("tablecast_snapshots_encoded_total")
        XCTAssertEqual(afterJoins, 1, "forty joins at one version share one snapshot")
        // A late joiner after a new version gets the shared snapshot and the update after it, not a new encoding.
        try await admin.insert("big", at: RowPath(section: 0, row: 0), value: "new", base: .current)
        let late = try TablecastClient(configuration: .init(url: server.url), transport: transport)
        late.connect()
        try await late.subscribe("big")
        XCTAssertEqual(late.replica(of: "big")?.table.sections[0].rows.count, 10_001)
        XCTAssertEqual(late.replica(of: "big")?.table.sections[0].rows.first?.value, "new")
        let afterNewVersion = try await server.metric("tablecast_snapshots_encoded_total")
        XCTAssertEqual(afterNewVersion, 1)
        for client in subscribers + [late, admin] { await client.close() }
        await transport.shutdown()
        await server.tearDown()
    }
}
