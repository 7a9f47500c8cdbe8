#!/usr/bin/env python3
"""Table files as a user keeps them, with 27 questions and gold queries: a
check of `--table` on data none of the benchmarks holds (dates written
MM/DD/YYYY and `11 Jun 2022`, money written `$1,234.50`, percentages, two
files linked only by a column of codes).

Usage: scripts/table_files.py IESR OUT_DIR

Writes the files to OUT_DIR/files (rows drawn with a fixed seed), turns
each set into a database with `IESR import` (so the tables are typed and
linked exactly as `iesr search --table` does it) under
OUT_DIR/database/<set>/<set>.sqlite, and writes OUT_DIR/dev.json; run it
with `iesr bench --dataset spider --data-dir OUT_DIR`. The gold queries
name the columns the import makes (`revenue_number`, `order_date_date`).
"""
import csv
import datetime
import pathlib
import random
import subprocess
import sys

from made_database import write_questions

if len(sys.argv) != 3:
    sys.exit(__doc__)
iesr, out = sys.argv[1], pathlib.Path(sys.argv[2])
files = out / 'files'
files.mkdir(parents=True, exist_ok=True)


def write_csv(name, header, rows):
    path = files / f'{name}.csv'
    with open(path, 'w', newline='') as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)
    return path


# A year of sales orders: one file.
random.seed(7)
reps = {'North': ['Ana Lopez', 'Ben Carter'], 'South': ['Chloe Kim', 'Dev Patel'],
        'East': ['Eva Novak'], 'West': ['Frank Ito', 'Gina Rossi']}
price = {'Widget A': 12.5, 'Widget B': 19.99, 'Gadget Pro': 249.0, 'Gizmo Mini': 59.0, 'Gizmo Max': 129.0}
orders = []
for i in range(1, 121):
    region = random.choice(list(reps))
    rep = random.choice(reps[region])
    product = random.choice(list(price))
    units = random.randint(1, 40)
    discount = random.choice([0, 0, 5, 10, 15])
    month, day = random.randint(1, 12), random.randint(1, 28)
    revenue = units * price[product] * (1 - discount / 100)
    orders.append([f'SO-{1000 + i}', f'{month:02d}/{day:02d}/2024', region, rep, product, units,
                   f'${revenue:,.2f}', f'{discount}%', random.choice(['No'] * 9 + ['Yes'])])
sales = [write_csv('sales_2024', ['Order ID', 'Order Date', 'Region', 'Sales Rep', 'Product', 'Units',
                                  'Revenue ($)', 'Discount', 'Returned?'], orders)]

# Staff and departments: two files linked by a department code.
random.seed(11)
departments = [('ENG', 'Engineering', '$2,400,000'), ('MKT', 'Marketing', '$850,000'),
               ('FIN', 'Finance', '$620,000'), ('HR', 'Human Resources', '$410,000'),
               ('OPS', 'Operations', '$1,150,000')]
firsts = ['Alice', 'Bob', 'Carmen', 'Dmitri', 'Elena', 'Farid', 'Grace', 'Hiro', 'Ines', 'Jonas', 'Kira',
          'Liam', 'Maya', 'Nikos', 'Olga', 'Pedro', 'Quinn', 'Rosa', 'Sven', 'Tara', 'Umar', 'Vera', 'Wen',
          'Xavier', 'Yara', 'Zane']
lasts = ['Smith', 'Garcia', 'Chen', 'Okafor', 'Muller', 'Rossi', 'Kowalski', 'Tanaka', 'Silva', 'Nguyen']
staff = []
for i in range(1, 61):
    code = random.choice(departments)[0]
    hired = datetime.date(2012, 1, 1) + datetime.timedelta(days=random.randint(0, 4300))
    salary = random.randint(45, 180) * 1000
    staff.append([f'E{i:03d}', f'{random.choice(firsts)} {random.choice(lasts)}', code,
                  hired.strftime('%d %b %Y'), f'${salary:,}', random.choice(['Y', 'Y', 'Y', 'N']),
                  random.choice(['Remote', 'Berlin', 'Lisbon', 'Austin'])])
company = [write_csv('employees', ['Employee ID', 'Full Name', 'Dept', 'Hire Date', 'Salary', 'Full-time',
                                   'Office'], staff),
           write_csv('departments', ['Dept Code', 'Department Name', 'Annual Budget'], departments)]

questions = {
    'sales_2024': [
        ('Which region had the highest total revenue?',
         'SELECT region FROM sales_2024 GROUP BY region ORDER BY SUM(revenue_number) DESC LIMIT 1'),
        ('How many orders were returned?', "SELECT COUNT(*) FROM sales_2024 WHERE returned = 'Yes'"),
        ('What was the total revenue in March?',
         "SELECT SUM(revenue_number) FROM sales_2024 WHERE order_date_date LIKE '2024-03-%'"),
        ('Which sales rep sold the most units of Gadget Pro?',
         "SELECT sales_rep FROM sales_2024 WHERE product = 'Gadget Pro' GROUP BY sales_rep ORDER BY SUM(units) DESC LIMIT 1"),
        ('What is the average discount on orders of Widget B?',
         "SELECT AVG(discount_number) FROM sales_2024 WHERE product = 'Widget B'"),
        ('How many orders were placed in the second quarter?',
         "SELECT COUNT(*) FROM sales_2024 WHERE order_date_date BETWEEN '2024-04-01' AND '2024-06-30'"),
        ('Which month had the most orders?',
         "SELECT strftime('%m', order_date_date) FROM sales_2024 GROUP BY 1 ORDER BY COUNT(*) DESC LIMIT 1"),
        ('What is the total revenue of orders that were not returned?',
         "SELECT SUM(revenue_number) FROM sales_2024 WHERE returned = 'No'"),
        ('Which product has the highest average revenue per order?',
         'SELECT product FROM sales_2024 GROUP BY product ORDER BY AVG(revenue_number) DESC LIMIT 1'),
        ('How many units did Eva Novak sell in total?',
         "SELECT SUM(units) FROM sales_2024 WHERE sales_rep = 'Eva Novak'"),
        ('List the sales reps of the West region.',
         "SELECT DISTINCT sales_rep FROM sales_2024 WHERE region = 'West'"),
        ('Who sold the largest single order by revenue?',
         'SELECT sales_rep FROM sales_2024 ORDER BY revenue_number DESC LIMIT 1'),
        ('How many orders had a discount of at least 10%?',
         'SELECT COUNT(*) FROM sales_2024 WHERE discount_number >= 10'),
        ('What was the revenue of order SO-1050?',
         "SELECT revenue_number FROM sales_2024 WHERE order_id = 'SO-1050'"),
        ('Which region sold the fewest units of Widget A?',
         "SELECT region FROM sales_2024 WHERE product = 'Widget A' GROUP BY region ORDER BY SUM(units) LIMIT 1"),
        ('What is the average number of units per order in December?',
         "SELECT AVG(units) FROM sales_2024 WHERE order_date_date LIKE '2024-12-%'"),
    ],
    'company': [
        ('How many employees work in Engineering?',
         "SELECT COUNT(*) FROM employees AS e JOIN departments AS d ON e.dept = d.dept_code WHERE d.department_name = 'Engineering'"),
        ('What is the average salary in the Marketing department?',
         "SELECT AVG(e.salary_number) FROM employees AS e JOIN departments AS d ON e.dept = d.dept_code WHERE d.department_name = 'Marketing'"),
        ('Who was hired most recently?',
         'SELECT full_name FROM employees ORDER BY hire_date_date DESC LIMIT 1'),
        ('How many employees were hired before 2015?',
         "SELECT COUNT(*) FROM employees WHERE hire_date_date < '2015-01-01'"),
        ('Which department has the highest total salary?',
         'SELECT d.department_name FROM employees AS e JOIN departments AS d ON e.dept = d.dept_code GROUP BY d.department_name ORDER BY SUM(e.salary_number) DESC LIMIT 1'),
        ('How many part-time employees are there?',
         "SELECT COUNT(*) FROM employees WHERE full_time = 'N'"),
        ('What is the annual budget of the Finance department?',
         "SELECT annual_budget_number FROM departments WHERE department_name = 'Finance'"),
        ('Which office has the most employees?',
         'SELECT office FROM employees GROUP BY office ORDER BY COUNT(*) DESC LIMIT 1'),
        ('List the names of employees in the Lisbon office who work in Operations.',
         "SELECT e.full_name FROM employees AS e JOIN departments AS d ON e.dept = d.dept_code WHERE e.office = 'Lisbon' AND d.department_name = 'Operations'"),
        ('How many employees were hired in 2020?',
         "SELECT COUNT(*) FROM employees WHERE hire_date_date LIKE '2020-%'"),
        ('Who is the highest paid employee in Human Resources?',
         "SELECT e.full_name FROM employees AS e JOIN departments AS d ON e.dept = d.dept_code WHERE d.department_name = 'Human Resources' ORDER BY e.salary_number DESC LIMIT 1"),
    ],
}

dev = []
for db, paths in [('sales_2024', sales), ('company', company)]:
    target = out / 'database' / db / f'{db}.sqlite'
    target.parent.mkdir(parents=True, exist_ok=True)
    target.unlink(missing_ok=True)
    command = [iesr, 'import', '--out', str(target)]
    for path in paths:
        command += ['--table', str(path)]
    subprocess.run(command, check=True)
    dev += [(db, q, sql) for q, sql in questions[db]]
write_questions(out, dev)
print(f'{len(dev)} questions in {out / "dev.json"}')
