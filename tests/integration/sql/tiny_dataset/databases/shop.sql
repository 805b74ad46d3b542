-- A made-up shop for the dataset eval's own test: one non-public schema (like ewallet's
-- consumer_div), a sequence, and dates relative to the day it is loaded.
CREATE SCHEMA IF NOT EXISTS sales;

CREATE TABLE sales.products (
  pid INT PRIMARY KEY,
  name VARCHAR(50) NOT NULL,
  price DECIMAL(10,2) NOT NULL
);

CREATE TABLE sales.orders (
  oid SERIAL PRIMARY KEY,
  pid INT NOT NULL,
  qty INT NOT NULL,
  placed_on DATE NOT NULL
);

INSERT INTO sales.products (pid, name, price) VALUES
  (1, 'Kettle', 25.50),
  (2, 'Toaster', 40.00),
  (3, 'Blender', 89.99);

INSERT INTO sales.orders (pid, qty, placed_on) VALUES
  (1, 2, CURRENT_DATE - INTERVAL '5 days'),
  (3, 1, CURRENT_DATE - INTERVAL '40 days');
