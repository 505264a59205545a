import TableModel
import TablecastClient
import TablecastProtocol
import XCTest

/// The Swift client's history API against a real server: `history` pages and `table(_:atVersion:)`.
final class HistoryClientTests: XCTestCase {
    func testHistoryMatchesTheAcksAndEveryVersionReadsBackAsItWas() async throws {
        let server = try await TestServer()
        let ana = try TablecastClient(configuration: .init(url: server.url, clientID: "ana-laptop", name: "Ana"))
        let bo = try TablecastClient(configuration: .init(url: server.url, clientID: "bo-phone", name: "Bo"))
        ana.connect()
        bo.connect()
        try await ana.createTable("list", sections: [SectionContent(header: "Fruit", rows: [RowContent(value: "fig")])])
        let live = try await ana.subscribe("list")
        var states = [live.version: live.table.sections]
        var acks: [(client: String, name: String, ack: ServerMessage.Ack)] = []
        let p = { (s: Int, r: Int) in RowPath(section: s, row: r) }
        for n in 0..<12 {
            let (client, id, name) = n % 2 == 0 ? (ana, "ana-laptop", "Ana") : (bo, "bo-phone", "Bo")
            let ack: ServerMessage.Ack
            switch n % 4 {
            case 0:
                ack = try await client.insert(
                    "list", at: p(0, 0), value: .string("item \(n)"), base: .current, ref: "r\(n)")
            case 1:
                ack = try await client.edit(
                    "list", at: p(0, 1), value: .number(Double(n)), base: .current, ref: "r\(n)")
            case 2: ack = try await client.move("list", from: p(0, 0), to: p(0, 1), base: .current, ref: "r\(n)")
            default: ack = try await client.delete("list", at: p(0, 1), base: .current, ref: "r\(n)")
            }
            acks.append((id, name, ack))
            try await eventually { ana.replica(of: "list")?.version == ack.version }
            states[ack.version] = ana.replica(of: "list")!.table.sections
        }

        let newest = try await bo.history("list", limit: 5)
        XCTAssertEqual(newest.entries.map(\.version), [12, 11, 10, 9, 8])
        XCTAssertEqual(newest.next, 7)
        XCTAssertEqual(newest.oldest, 0)
        var all = newest.entries
        var next = newest.next
        while let to = next {
            let page = try await bo.history("list", to: to, limit: 5)
            all += page.entries
            next = page.next
        }
        XCTAssertEqual(all.reversed().map(\.version), acks.map(\.ack.version))
        for (entry, expected) in zip(all.reversed(), acks) {
            XCTAssertEqual(entry.originClient, expected.client)
            XCTAssertEqual(entry.originName, expected.name)
            XCTAssertEqual(entry.originRef, expected.ack.ref)
        }

        for (version, sections) in states {
            let past = try await ana.table("list", atVersion: version)
            XCTAssertEqual(past.version, version)
            XCTAssertEqual(past.table.sections, sections, "version \(version)")
        }
        XCTAssertEqual(ana.replica(of: "list")?.version, 12, "reading the past leaves the subscribed replica alone")
        do {
            _ = try await ana.table("list", atVersion: 13)
            XCTFail("a future version must be refused")
        } catch let error as ProtocolError {
            XCTAssertEqual(error.code, .outOfRange)
        }
        await ana.close()
        await bo.close()
        await server.tearDown()
    }
}
