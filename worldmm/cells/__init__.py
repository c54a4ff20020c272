"""Database cells (issue 63, docs/cells.md): which PostgreSQL cluster holds each wearer, and moving them.

A deployment of one cell has no placement map and looks as it did before cells. With two or more, the
placement map (`port.PlacementMap`: DynamoDB in aws, `worldmm_cell_placements` locally) names each user's
cell; the composition root (`Services.for_user`) resolves it once per invocation through `CellRouter`, and
every connection of that invocation goes to that cell. `move.move_user` is the operator's move.
"""
