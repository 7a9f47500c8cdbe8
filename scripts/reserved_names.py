#!/usr/bin/env python3
"""Two databases made here whose tables and columns are named by SQL
keywords, with 24 questions and gold queries: a check on names real
schemas use and SQLite reads only in quotes (a `transaction` table with
`from` and `to` accounts and a `case` table of disputes; a restaurant's
`table`, `order` and menu `group`; an account's `limit`).

Usage: scripts/reserved_names.py OUT_DIR

OUT_DIR gets `dev.json` and `database/<name>/<name>.sqlite` for `bank` and
`restaurant` (rows drawn with a fixed seed, so every run makes the same
files); run it with `iesr bench --dataset spider --data-dir OUT_DIR`.
"""
import random

from made_database import database, out_dir, write_questions

out = out_dir(__doc__)
random.seed(11)

bank = database(out, 'bank')
bank.executescript('''
CREATE TABLE account (account_id INTEGER PRIMARY KEY, holder TEXT, "group" TEXT, "limit" REAL, opened_on TEXT);
CREATE TABLE "transaction" (transaction_id INTEGER PRIMARY KEY, "from" INTEGER REFERENCES account(account_id), "to" INTEGER REFERENCES account(account_id), amount REAL, booked_on TEXT);
CREATE TABLE "case" (case_id INTEGER PRIMARY KEY, transaction_id INTEGER REFERENCES "transaction"(transaction_id), reason TEXT, closed INTEGER);
''')
holders = ['Ana Costa', 'Ben Okafor', 'Chloe Martin', 'Dmitri Volkov', 'Elena Rossi', 'Farid Haddad', 'Grace Lee',
           'Hugo Berger', 'Ines Duarte', 'Jonas Weber', 'Kira Sato', 'Liam Walsh']
groups = ['retail', 'retail', 'business', 'private', 'retail', 'business', 'retail', 'private', 'retail', 'business',
          'retail', 'retail']
limits = [500, 1000, 20000, 50000, 500, 15000, 1000, 40000, 2000, 25000, 500, 1000]
bank.executemany('INSERT INTO account VALUES (?,?,?,?,?)',
                 [(i, h, groups[i - 1], float(limits[i - 1]), f'20{18 + i % 6}-0{1 + i % 9}-1{i % 10}')
                  for i, h in enumerate(holders, 1)])
# Accounts 11 and 12 never send; account 3 sends the most.
transactions = []
for t in range(1, 121):
    sender = random.choices(range(1, 11), [3, 2, 9, 2, 3, 4, 2, 1, 2, 3])[0]
    receiver = random.choice([a for a in range(1, 13) if a != sender])
    amount = round(random.uniform(5, 3000), 2)
    transactions.append((t, sender, receiver, amount, f'2024-{1 + t % 12:02d}-{1 + t % 28:02d}'))
bank.executemany('INSERT INTO "transaction" VALUES (?,?,?,?,?)', transactions)
reasons = ['fraud', 'duplicate', 'not received', 'fraud', 'wrong amount', 'fraud', 'duplicate', 'not received',
           'fraud', 'wrong amount']
bank.executemany('INSERT INTO "case" VALUES (?,?,?,?)',
                 [(i, 7 * i + 3, r, i % 3 != 0) for i, r in enumerate(reasons, 1)])
bank.commit()

restaurant = database(out, 'restaurant')
restaurant.executescript('''
CREATE TABLE "table" (table_id INTEGER PRIMARY KEY, seats INTEGER, terrace TEXT);
CREATE TABLE menu_item (item_id INTEGER PRIMARY KEY, name TEXT, "group" TEXT, price REAL);
CREATE TABLE "order" (order_id INTEGER PRIMARY KEY, "table" INTEGER REFERENCES "table"(table_id), placed_at TEXT, guests INTEGER);
CREATE TABLE order_line (order_id INTEGER REFERENCES "order"(order_id), item_id INTEGER REFERENCES menu_item(item_id), quantity INTEGER, PRIMARY KEY (order_id, item_id));
''')
restaurant.executemany('INSERT INTO "table" VALUES (?,?,?)',
                       [(1, 2, 'no'), (2, 2, 'no'), (3, 4, 'no'), (4, 4, 'yes'), (5, 6, 'yes'), (6, 8, 'no'),
                        (7, 4, 'yes'), (8, 2, 'yes')])
items = [(1, 'Tomato soup', 'starter', 6.5), (2, 'Bruschetta', 'starter', 7.0), (3, 'Caesar salad', 'starter', 9.5),
         (4, 'Risotto', 'main', 16.0), (5, 'Steak frites', 'main', 24.5), (6, 'Grilled salmon', 'main', 21.0),
         (7, 'Margherita pizza', 'main', 12.0), (8, 'Tiramisu', 'dessert', 7.5), (9, 'Panna cotta', 'dessert', 6.5),
         (10, 'Espresso', 'drink', 2.5), (11, 'House wine', 'drink', 5.5), (12, 'Lemonade', 'drink', 3.5)]
restaurant.executemany('INSERT INTO menu_item VALUES (?,?,?,?)', items)
orders, lines = [], []
# Table 5 takes the most orders; table 8 none.
for o in range(1, 81):
    table = random.choices(range(1, 8), [2, 2, 3, 3, 6, 2, 3])[0]
    hour = random.choice([12, 13, 19, 20, 21])
    orders.append((o, table, f'2024-06-{1 + o % 30:02d} {hour}:{random.choice(["00", "15", "30", "45"])}:00',
                   random.randint(1, 6)))
    for item in random.sample(range(1, 13), random.randint(1, 4)):
        lines.append((o, item, random.randint(1, 3)))
restaurant.executemany('INSERT INTO "order" VALUES (?,?,?,?)', orders)
restaurant.executemany('INSERT INTO order_line VALUES (?,?,?)', lines)
restaurant.commit()

Q = [
    ('bank', 'How many accounts are in the business group?',
     'SELECT COUNT(*) FROM account WHERE "group" = \'business\''),
    ('bank', 'Which account holders have a limit above 10000?',
     'SELECT holder FROM account WHERE "limit" > 10000'),
    ('bank', 'What is the average limit of retail accounts?',
     'SELECT AVG("limit") FROM account WHERE "group" = \'retail\''),
    ('bank', 'How many transactions are there?',
     'SELECT COUNT(*) FROM "transaction"'),
    ('bank', 'What is the total amount of all transactions booked in March 2024?',
     'SELECT SUM(amount) FROM "transaction" WHERE booked_on LIKE \'2024-03-%\''),
    ('bank', 'How many transactions did Chloe Martin send?',
     'SELECT COUNT(*) FROM "transaction" t JOIN account a ON t."from" = a.account_id WHERE a.holder = \'Chloe Martin\''),
    ('bank', 'What is the total amount received by Liam Walsh?',
     'SELECT SUM(t.amount) FROM "transaction" t JOIN account a ON t."to" = a.account_id WHERE a.holder = \'Liam Walsh\''),
    ('bank', 'Which account holder sent the most transactions?',
     'SELECT a.holder FROM "transaction" t JOIN account a ON t."from" = a.account_id GROUP BY a.account_id ORDER BY COUNT(*) DESC LIMIT 1'),
    ('bank', 'Which account holders never sent a transaction?',
     'SELECT holder FROM account WHERE account_id NOT IN (SELECT "from" FROM "transaction")'),
    ('bank', 'How many transactions went from a business account to a retail account?',
     'SELECT COUNT(*) FROM "transaction" t JOIN account s ON t."from" = s.account_id JOIN account r ON t."to" = r.account_id WHERE s."group" = \'business\' AND r."group" = \'retail\''),
    ('bank', 'How many cases were opened for fraud?',
     'SELECT COUNT(*) FROM "case" WHERE reason = \'fraud\''),
    ('bank', 'What is the total amount of the transactions that have a case?',
     'SELECT SUM(t.amount) FROM "transaction" t JOIN "case" c ON c.transaction_id = t.transaction_id'),
    ('restaurant', 'How many tables have more than 4 seats?',
     'SELECT COUNT(*) FROM "table" WHERE seats > 4'),
    ('restaurant', 'How many seats are there on the terrace in total?',
     'SELECT SUM(seats) FROM "table" WHERE terrace = \'yes\''),
    ('restaurant', 'List the names of the desserts on the menu.',
     'SELECT name FROM menu_item WHERE "group" = \'dessert\''),
    ('restaurant', 'What is the average price of a main course?',
     'SELECT AVG(price) FROM menu_item WHERE "group" = \'main\''),
    ('restaurant', 'How many orders were placed?',
     'SELECT COUNT(*) FROM "order"'),
    ('restaurant', 'Which table took the most orders?',
     'SELECT "table" FROM "order" GROUP BY "table" ORDER BY COUNT(*) DESC LIMIT 1'),
    ('restaurant', 'How many orders were placed at tables on the terrace?',
     'SELECT COUNT(*) FROM "order" o JOIN "table" t ON o."table" = t.table_id WHERE t.terrace = \'yes\''),
    ('restaurant', 'Which tables have never had an order?',
     'SELECT table_id FROM "table" WHERE table_id NOT IN (SELECT "table" FROM "order")'),
    ('restaurant', 'How many espressos were ordered in total?',
     'SELECT SUM(l.quantity) FROM order_line l JOIN menu_item m ON l.item_id = m.item_id WHERE m.name = \'Espresso\''),
    ('restaurant', 'What is the average number of guests per order at dinner, from 19:00 on?',
     'SELECT AVG(guests) FROM "order" WHERE time(placed_at) >= \'19:00:00\''),
    ('restaurant', 'How many orders had more guests than their table has seats?',
     'SELECT COUNT(*) FROM "order" o JOIN "table" t ON o."table" = t.table_id WHERE o.guests > t.seats'),
    ('restaurant', 'Which menu group sold the most items?',
     'SELECT m."group" FROM order_line l JOIN menu_item m ON l.item_id = m.item_id GROUP BY m."group" ORDER BY SUM(l.quantity) DESC LIMIT 1'),
]
write_questions(out, Q)
