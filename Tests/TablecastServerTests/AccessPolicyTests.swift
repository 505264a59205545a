import TablecastServer
import XCTest

final class AccessPolicyTests: XCTestCase {
    private let policy = AccessPolicy(grants: [
        .init(token: "reader", role: .read, tables: [TablePattern("*")]),
        .init(token: "team", role: .write, tables: [TablePattern("team-*"), TablePattern("shared")]),
        .init(token: "team", role: .admin, tables: [TablePattern("team-admin")], user: "ana", name: "Ana"),
    ])

    private func credential(_ token: String) throws -> Credential {
        try policy.authenticate(token: token, now: 0)
    }

    func testOpenPolicyMakesEveryoneAdmin() throws {
        XCTAssertFalse(AccessPolicy.open.requiresToken)
        XCTAssertEqual(try AccessPolicy.open.authenticate(token: nil, now: 0), .open)
        XCTAssertEqual(AccessPolicy.open.role(nil, on: "anything"), .admin)
        XCTAssertNoThrow(try AccessPolicy.open.authorize(nil, table: "t", needs: .admin, now: 0))
    }

    func testHighestMatchingGrantWins() throws {
        let team = try credential("team")
        XCTAssertEqual(team.role(on: "team-admin"), .admin)
        XCTAssertEqual(team.role(on: "team-x"), .write)
        XCTAssertEqual(team.role(on: "shared"), .write)
        XCTAssertNil(team.role(on: "other"))
        XCTAssertEqual(try credential("reader").role(on: "other"), .read)
    }

    func testATokensFileEntryMayNameItsUser() throws {
        let team = try credential("team")
        XCTAssertEqual(team.user, "ana")
        XCTAssertEqual(team.name, "Ana")
        XCTAssertEqual(team.principal, "user:ana")
        let reader = try credential("reader")
        XCTAssertNil(reader.user)
        XCTAssertEqual(reader.principal.count, 64, "the token's SHA-256, never the token")
    }

    func testMissingTokenIsUnauthorized() {
        XCTAssertThrowsError(try policy.authorize(nil, table: "shared", needs: .read, now: 0)) { error in
            XCTAssertEqual((error as? AccessPolicy.Denial)?.code, .unauthorized)
            XCTAssertEqual((error as? AccessPolicy.Denial)?.message, "this server requires a token: send one in hello")
        }
        XCTAssertThrowsError(try policy.authenticate(token: nil, now: 0)) { error in
            XCTAssertEqual((error as? AccessPolicy.Denial)?.message, "this server requires a token: send one in hello")
        }
    }

    func testUnknownTokenIsToldApartFromAMissingOne() {
        XCTAssertThrowsError(try policy.authenticate(token: "guess", now: 0)) { error in
            XCTAssertEqual((error as? AccessPolicy.Denial)?.code, .unauthorized)
            XCTAssertEqual(
                (error as? AccessPolicy.Denial)?.message,
                "unknown token: the token given in hello is not valid on this server")
        }
    }

    func testInsufficientRoleIsForbiddenAndNamesTheTable() throws {
        let reader = try credential("reader")
        XCTAssertThrowsError(try policy.authorize(reader, table: "shared", needs: .write, now: 0)) { error in
            XCTAssertEqual((error as? AccessPolicy.Denial)?.code, .forbidden)
            XCTAssertEqual((error as? AccessPolicy.Denial)?.message, "this token may not write table 'shared'")
        }
        let team = try credential("team")
        XCTAssertThrowsError(try policy.authorize(team, table: "elsewhere", needs: .read, now: 0)) { error in
            XCTAssertEqual((error as? AccessPolicy.Denial)?.code, .forbidden)
        }
        XCTAssertNoThrow(try policy.authorize(team, table: "team-admin", needs: .admin, now: 0))
    }

    func testAnExpiredCredentialIsUnauthorizedOnceItsLeewayIsOver() {
        let expiring = Credential(
            principal: "user:bo", grants: [.init(role: .admin, tables: [TablePattern("*")])], expiry: 100)
        XCTAssertNoThrow(try policy.authorize(expiring, table: "t", needs: .admin, now: 100 + TokenClaims.leeway - 1))
        XCTAssertThrowsError(
            try policy.authorize(expiring, table: "t", needs: .read, now: 100 + TokenClaims.leeway)
        ) { error in
            XCTAssertEqual((error as? AccessPolicy.Denial)?.code, .unauthorized)
            XCTAssertEqual((error as? AccessPolicy.Denial)?.message, "token refused: it has expired")
        }
    }
}
