import Foundation
import TableModel
import TablecastServer

/// The `--tokens` file: which token grants which role on which tables, and optionally whose it is (`user`, `name`:
/// as a signed token's `sub` and `name`).
///
/// ```json
/// {"tokens": [
///   {"token": "reader-7f3a", "role": "read", "tables": ["*"]},
///   {"token": "team-c01d", "role": "write", "tables": ["team-*", "groceries"], "user": "ana", "name": "Ana"},
///   {"token": "ops-99e2", "role": "admin", "tables": ["*"]}
/// ]}
/// ```
enum TokensFile {
    struct Problem: Error, CustomStringConvertible {
        let description: String
    }

    static func load(_ path: String) throws -> [AccessPolicy.Grant] {
        return try parse(readFile(path, what: "the tokens file"), path: path)
    }

    static func parse(_ bytes: [UInt8], path: String) throws -> [AccessPolicy.Grant] {
        let json: JSONValue
        do { json = try JSONValue(parsing: bytes) } catch { throw Problem(description: "\(path): \(error)") }
        guard case .object(let top) = json, case .array(let entries)? = top["tokens"] else {
            throw Problem(description: "\(path): expected {\"tokens\": [{\"token\", \"role\", \"tables\"}, …]}")
        }
        var grants: [AccessPolicy.Grant] = []
        for (index, entry) in entries.enumerated() {
            let at = "\(path): tokens[\(index)]"
            guard case .object(let fields) = entry else { throw Problem(description: "\(at) must be an object") }
            guard case .string(let token)? = fields["token"], !token.isEmpty else {
                throw Problem(description: "\(at): 'token' must be a non-empty string")
            }
            guard case .string(let roleName)? = fields["role"], let role = Role(rawValue: roleName) else {
                throw Problem(description: "\(at): 'role' must be \"read\", \"write\" or \"admin\"")
            }
            guard case .array(let patterns)? = fields["tables"], !patterns.isEmpty else {
                throw Problem(description: "\(at): 'tables' must be a non-empty array of table-name patterns")
            }
            var tables: [TablePattern] = []
            for pattern in patterns {
                guard case .string(let text) = pattern, !text.isEmpty else {
                    throw Problem(description: "\(at): every table pattern must be a non-empty string")
                }
                tables.append(TablePattern(text))
            }
            var identity: [String: String] = [:]
            for key in ["user", "name"] {
                switch fields[key] {
                case nil: break
                case .string(let value)? where !value.isEmpty && value.count <= 64: identity[key] = value
                default: throw Problem(description: "\(at): '\(key)' must be a string of 1 to 64 characters")
                }
            }
            grants.append(
                .init(token: token, role: role, tables: tables, user: identity["user"], name: identity["name"]))
        }
        guard !grants.isEmpty else { throw Problem(description: "\(path): no tokens: nobody could connect") }
        return grants
    }
}
